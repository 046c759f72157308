package simnode

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestAStatusWriteKeepsTryingWhileTheAPIServerAnswersRetriably(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		// failures are the answers to the first status writes, in order; later writes succeed.
		failures   []error
		wantErr    bool
		wantWrites int
		wantPhase  corev1.PodPhase
	}{
		{name: "a write that conflicts six times in a row, more than client-go's default four tries, lands",
			failures: repeat(apierrors.NewConflict(pods, "p", errors.New("stale")), 6), wantWrites: 7, wantPhase: corev1.PodRunning},
		{name: "server timeouts, throttling and an internal error are tried again",
			failures: []error{apierrors.NewServerTimeout(pods, "update", 1), apierrors.NewTooManyRequests("slow down", 1),
				apierrors.NewInternalError(errors.New("etcd leader changed")), apierrors.NewServiceUnavailable("starting")},
			wantWrites: 5, wantPhase: corev1.PodRunning},
		{name: "a refused write ends at once and leaves the status as it was",
			failures: []error{apierrors.NewForbidden(pods, "p", errors.New("no"))}, wantErr: true, wantWrites: 1, wantPhase: corev1.PodPending},
		{name: "a pod that is gone ends the write",
			failures: []error{apierrors.NewNotFound(pods, "p")}, wantErr: true, wantWrites: 1, wantPhase: corev1.PodPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := statusWriteBackoff
			statusWriteBackoff.Duration, statusWriteBackoff.Cap = 0, 0 // the tries, not the waits, are under test
			t.Cleanup(func() { statusWriteBackoff = saved })
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
			kube := fake.NewClientset(pod.DeepCopy())
			writes := 0
			kube.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "status" {
					return false, nil, nil
				}
				writes++
				if writes <= len(tc.failures) {
					return true, nil, tc.failures[writes-1]
				}
				return false, nil, nil
			})
			n := &Node{kube: kube}

			err := n.setStatus(context.Background(), pod, func(s *corev1.PodStatus) { s.Phase = corev1.PodRunning })

			if (err != nil) != tc.wantErr {
				t.Fatalf("setStatus error = %v, want an error: %t", err, tc.wantErr)
			}
			if writes != tc.wantWrites {
				t.Errorf("status writes = %d, want %d", writes, tc.wantWrites)
			}
			stored, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status.Phase != tc.wantPhase {
				t.Errorf("stored phase = %s, want %s", stored.Status.Phase, tc.wantPhase)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}
