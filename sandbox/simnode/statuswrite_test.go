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
			triesOnly(t)
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

// triesOnly takes the waits out of the status write's backoff for the test: the tries are under test.
func triesOnly(t *testing.T) {
	saved := statusWriteBackoff
	statusWriteBackoff.Duration, statusWriteBackoff.Cap = 0, 0
	t.Cleanup(func() { statusWriteBackoff = saved })
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestABindKeepsTryingWhileTheAPIServerAnswersRetriably(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	timeout := apierrors.NewServerTimeout(pods, "create", 1)
	alreadyBound := apierrors.NewConflict(pods, "p", errors.New("pod p is already assigned to a node"))
	for _, tc := range []struct {
		name string
		// answers are the answers to the binds, in order; onNode, when set, is where the first bind puts the
		// pod even though it answers with an error (a bind that landed but timed out). Later binds succeed.
		answers   []error
		onNode    string
		wantErr   bool
		wantBinds int
	}{
		{name: "a bind that times out is tried again and lands", answers: []error{timeout, apierrors.NewTooManyRequests("slow down", 1)}, wantBinds: 3},
		{name: "a bind that landed though its answer timed out is taken as done", answers: []error{timeout, alreadyBound}, onNode: DefaultNodeName, wantBinds: 2},
		{name: "a pod another try bound elsewhere is not ours", answers: []error{timeout, alreadyBound}, onNode: "other-node", wantErr: true, wantBinds: 2},
		{name: "a pod already bound on the first try is not ours", answers: []error{alreadyBound}, wantErr: true, wantBinds: 1},
		{name: "a refused bind ends at once", answers: []error{apierrors.NewForbidden(pods, "p", errors.New("no"))}, wantErr: true, wantBinds: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			triesOnly(t)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
			kube := fake.NewClientset(pod.DeepCopy())
			binds := 0
			kube.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "binding" {
					return false, nil, nil
				}
				binds++
				if binds == 1 && tc.onNode != "" {
					landed := pod.DeepCopy()
					landed.Spec.NodeName = tc.onNode
					if err := kube.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, landed, "ns"); err != nil {
						t.Fatal(err)
					}
				}
				if binds <= len(tc.answers) {
					return true, nil, tc.answers[binds-1]
				}
				return true, nil, nil
			})
			n := &Node{kube: kube, opts: Options{NodeName: DefaultNodeName}}

			err := n.bind(context.Background(), pod)

			if (err != nil) != tc.wantErr {
				t.Fatalf("bind error = %v, want an error: %t", err, tc.wantErr)
			}
			if binds != tc.wantBinds {
				t.Errorf("binds = %d, want %d", binds, tc.wantBinds)
			}
		})
	}
}
