package controller

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func claim(ownerUID string, finalizers ...string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf-workdir", Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: types.UID(ownerUID)}}}}
}

func TestCreatingAClaimAdoptsOnlyTheWorkflowsOwn(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		existing *corev1.PersistentVolumeClaim
		wantErr  string
	}{
		{"a free name is created", nil, ""},
		{"the workflow's own claim (an unpersisted create) is success", claim("uid-1"), ""},
		{"a claim owned by another workflow is argo's refusal", claim("uid-old"), "wf-workdir pvc already exists with different ownerreference"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.existing != nil {
				kube = fake.NewClientset(tc.existing)
			}
			err := pvcControl{kube: kube}.CreatePVC(context.Background(), claim("uid-1"))
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("CreatePVC error %q, want %q", got, tc.wantErr)
			}
			if _, err := kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "wf-workdir", metav1.GetOptions{}); err != nil {
				t.Errorf("claim not there: %v", err)
			}
		})
	}
}

func TestDeletingAClaimLiftsPVCProtectionSoItGoesNow(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		existing *corev1.PersistentVolumeClaim
	}{
		{"a claim without finalizers is deleted", claim("uid-1")},
		{"a claim already gone is success", nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.existing != nil {
				kube = fake.NewClientset(tc.existing)
			}
			if err := (pvcControl{kube: kube}).DeletePVC(context.Background(), "ns", "wf-workdir"); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "wf-workdir", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("claim still there: %v", err)
			}
		})
	}
	// The fake clientset deletes at once, finalizers or not; a claim held by pvc-protection (as the API
	// server keeps it, being deleted) must lose that finalizer and only that one.
	kube := fake.NewClientset(claim("uid-1", pvcProtectionFinalizer, "example.com/keep"))
	kube.PrependReactor("delete", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // the API server marks it deleting and keeps it while finalizers remain
	})
	if err := (pvcControl{kube: kube}).DeletePVC(context.Background(), "ns", "wf-workdir"); err != nil {
		t.Fatal(err)
	}
	got, err := kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "wf-workdir", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Finalizers, pvcProtectionFinalizer) || !slices.Contains(got.Finalizers, "example.com/keep") {
		t.Errorf("finalizers %v, want pvc-protection lifted and the others kept", got.Finalizers)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
