package provenance

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestLoadReadsOrCreatesTheKeySecret(t *testing.T) {
	stored := func(b byte, n int) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: DefaultSecretName, Namespace: "argo"},
			Data: map[string][]byte{SecretKeyField: bytes.Repeat([]byte{b}, n)}}
	}
	random := bytes.Repeat([]byte{9}, KeySize)
	for _, tc := range []struct {
		sentence string
		objects  []runtime.Object
		// raceWith is a Secret another replica creates between this one's read and its create.
		raceWith *corev1.Secret
		getErr   error
		wantKey  byte // the byte the loaded key repeats
		wantErr  string
	}{
		{sentence: "an existing key is read", objects: []runtime.Object{stored(5, KeySize)}, wantKey: 5},
		{sentence: "a missing key is created from the random source", wantKey: 9},
		{sentence: "a replica that loses the race to create it reads the winner's", raceWith: stored(6, KeySize), wantKey: 6},
		{sentence: "a key too short is an error naming the Secret", objects: []runtime.Object{stored(5, 8)}, wantErr: "argo/wfguard-record-key"},
		{sentence: "a read the API server refuses is an error, never a new key",
			getErr: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, DefaultSecretName, errors.New("no")), wantErr: "forbidden"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset(tc.objects...)
			if tc.getErr != nil {
				kube.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.getErr })
			}
			if tc.raceWith != nil {
				kube.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					if err := kube.Tracker().Add(tc.raceWith); err != nil {
						t.Fatal(err)
					}
					return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, DefaultSecretName)
				})
			}
			key, err := Load(context.Background(), kube.CoreV1().Secrets("argo"), DefaultSecretName, bytes.NewReader(random))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := mustKey(t, tc.wantKey)
			if key.Seal(PurposeCronRun, "x") != want.Seal(PurposeCronRun, "x") {
				t.Fatalf("loaded another key than the one repeating %d", tc.wantKey)
			}
			secret, err := kube.CoreV1().Secrets("argo").Get(context.Background(), DefaultSecretName, metav1.GetOptions{})
			if err != nil || !bytes.Equal(secret.Data[SecretKeyField], bytes.Repeat([]byte{tc.wantKey}, KeySize)) {
				t.Fatalf("the stored Secret is %v (%v), want the loaded key", secret, err)
			}
		})
	}
}
