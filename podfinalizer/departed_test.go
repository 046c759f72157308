package podfinalizer

import (
	"context"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestPodsThatLeaveTheCacheHoldingTheFinalizer(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		// leave makes the cache drop the pod (the cached copy is passed); it returns what PodDeleted reported.
		leave    func(t *testing.T, f *fixture, cached *corev1.Pod) (ownSettle bool)
		wantKept bool
		// wantOwnSettle: the departure is our own patch's echo, so the workflow is not queued for it.
		wantOwnSettle bool
		wantReleased  float64
	}{
		{
			sentence: "a pod that leaves holding the finalizer, not by our patch, is kept aside and released by its workflow's pass",
			leave:    func(t *testing.T, f *fixture, cached *corev1.Pod) bool { return f.r.PodDeleted(cached) },
			wantKept: true, wantReleased: 1,
		},
		{
			sentence: "a tombstone holding the finalizer is kept aside too: a pod holding it cannot be gone",
			leave: func(t *testing.T, f *fixture, cached *corev1.Pod) bool {
				return f.r.PodDeleted(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: cached})
			},
			wantKept: true, wantReleased: 1,
		},
		{
			sentence: "a pod that leaves because of our own settling patch is not kept",
			leave: func(t *testing.T, f *fixture, cached *corev1.Pod) bool {
				f.settleNow(t, cached)
				return f.r.PodDeleted(cached) // the watch reports the departure with the previous content
			},
			wantKept: false, wantOwnSettle: true,
		},
		{
			sentence: "a pod whose departure reaches the cache before our patch's expectation is dropped by that patch, uncounted",
			leave: func(t *testing.T, f *fixture, cached *corev1.Pod) bool {
				stored, _ := f.kube.CoreV1().Pods("ns").Get(context.Background(), "a", metav1.GetOptions{})
				early := cached.DeepCopy()
				early.ResourceVersion = stored.ResourceVersion // our patch's version (the fake server keeps it)
				ownSettle := f.r.PodDeleted(early)
				f.settleNow(t, cached)
				return ownSettle // not known as ours yet: the workflow is looked at
			},
			wantKept: false,
		},
		{
			sentence: "a pod deleted without the finalizer is not kept",
			leave: func(t *testing.T, f *fixture, cached *corev1.Pod) bool {
				gone := cached.DeepCopy()
				gone.Finalizers = nil
				return f.r.PodDeleted(gone)
			},
			wantKept: false,
		},
		{
			sentence: "a kept pod that comes back to the cache is dropped",
			leave: func(t *testing.T, f *fixture, cached *corev1.Pod) bool {
				ownSettle := f.r.PodDeleted(cached)
				f.r.PodAdded(cached)
				return ownSettle
			},
			wantKept: false,
		},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			cached := pod("a", "wf", "wf-uid", "wf-1")
			f := newFixture(t, Config{StatusFinalizer: true}, cached)
			if got := tc.leave(t, f, cached); got != tc.wantOwnSettle {
				t.Errorf("reported as our own settling patch's echo = %v, want %v", got, tc.wantOwnSettle)
			}
			if got := f.r.IsDeparted(cached); got != tc.wantKept {
				t.Fatalf("kept aside = %v, want %v", got, tc.wantKept)
			}
			if !tc.wantKept {
				if got := testutil.ToFloat64(f.r.metrics.departedReleased); got != 0 {
					t.Errorf("departed releases = %v, want 0", got)
				}
				return
			}
			if got := f.r.Departed("wf-uid"); len(got) != 1 || got[0].Name != "a" {
				t.Fatalf("Departed(wf-uid) = %v, want pod a", got)
			}
			// The workflow's pass sees the kept copy with the cached pods (none left) and settles it.
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "wf-uid"},
				Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded}}
			if _, err := f.r.ReleasePersisted(context.Background(), wf, map[string]*corev1.Pod{"wf-1": cached}); err != nil {
				t.Fatal(err)
			}
			if got := f.holding(t); len(got) != 0 {
				t.Errorf("pods holding the finalizer = %v, want none", got)
			}
			if f.r.IsDeparted(cached) {
				t.Error("still kept aside after its release")
			}
			if got := testutil.ToFloat64(f.r.metrics.departedReleased); got != tc.wantReleased {
				t.Errorf("departed releases = %v, want %v", got, tc.wantReleased)
			}
		})
	}
}

// settleNow settles pod as the controller's pass does once its workflow is complete.
func (f *fixture) settleNow(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := f.r.settle(context.Background(), Settlement{Pod: pod, Release: true, Complete: true}, releasePersisted); err != nil {
		t.Fatal(err)
	}
}
