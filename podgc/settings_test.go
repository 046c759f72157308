package podgc

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestControllerConfigSettings(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ten := 10 * time.Second
	for _, tc := range []struct {
		sentence  string
		podDelay  string
		settings  Settings
		wantMark  bool // a delay is recorded first
		wantAt    time.Time
		wantGrace *int64
	}{
		{"without settings an unset delay deletes at once", "", Settings{}, false, now, nil},
		{"podGCDeleteDelayDuration delays a workflow that sets no delay", "", Settings{DeleteDelay: &ten}, true, now.Add(ten), nil},
		{"the workflow's own deleteDelayDuration wins", "0s", Settings{DeleteDelay: &ten}, false, now, nil},
		{"podGCGracePeriodSeconds is the deletion's grace period", "", Settings{GracePeriodSeconds: ptr.To(int64(3))}, false, now, ptr.To(int64(3))},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{Spec: wfv1.WorkflowSpec{PodGC: &wfv1.PodGC{Strategy: wfv1.PodGCOnPodCompletion, DeleteDelayDuration: tc.podDelay}},
				Status: wfv1.WorkflowStatus{Nodes: wfv1.Nodes{"n1": {ID: "n1", Phase: wfv1.NodeSucceeded, TaskResultSynced: ptr.To(true)}}}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1", UID: "u1"}}
			kube := fake.NewClientset(pod)
			var grace *int64
			deleted := false
			kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				deleted, grace = true, a.(k8stesting.DeleteActionImpl).DeleteOptions.GracePeriodSeconds
				return false, nil, nil
			})
			c, err := NewCollector(kube, clocktesting.NewFakePassiveClock(now), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			c.Settings = func() Settings { return tc.settings }
			decisions, err := PodsToDelete(wf, map[string]*corev1.Pod{"n1": pod}, now, tc.settings.DeleteDelay)
			if err != nil || len(decisions) != 1 {
				t.Fatalf("%d decisions (err %v), want 1", len(decisions), err)
			}
			if d := decisions[0]; d.Mark != tc.wantMark || d.At.After(now) != tc.wantAt.After(now) || (tc.wantMark && !d.At.Equal(tc.wantAt)) {
				t.Fatalf("decision mark %v at %s, want mark %v at %s", d.Mark, d.At, tc.wantMark, tc.wantAt)
			}
			if _, err := c.Collect(t.Context(), wf, map[string]*corev1.Pod{"n1": pod}); err != nil {
				t.Fatal(err)
			}
			if deleted == tc.wantMark {
				t.Fatalf("deleted = %v, want %v", deleted, !tc.wantMark)
			}
			if !ptr.Equal(grace, tc.wantGrace) {
				t.Errorf("grace period = %v, want %v", grace, tc.wantGrace)
			}
		})
	}
}
