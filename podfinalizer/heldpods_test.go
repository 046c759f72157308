package podfinalizer

import (
	"context"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// The held-pods gauge follows the pod cache at each sweep: it rises as pods get the finalizer and falls as
// they lose it, by age bucket; the orphans a sweep finds are released with reason orphaned by their key's pass.
func TestTheHeldPodsGaugeRisesAndFallsWithTheFinalizer(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := newFixture(t, Config{Clock: clk, SweepInterval: time.Hour})
	if err := f.workflows.Add(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "ns", UID: "live-uid"}}); err != nil {
		t.Fatal(err)
	}
	cached := func(name, wf string, uid types.UID, age time.Duration) *corev1.Pod {
		p := pod(name, wf, uid, name)
		p.CreationTimestamp = metav1.NewTime(clk.Now().Add(-age))
		return p
	}
	add := func(p *corev1.Pod) {
		if err := f.r.cfg.Pods.Add(p); err != nil {
			t.Fatal(err)
		}
		if err := f.kube.Tracker().Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	// syncFromServer plays the informer: the cache gets the server's copy of every pod.
	syncFromServer := func() {
		list, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if err := f.r.cfg.Pods.Update(&list.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, step := range []struct {
		sentence     string
		do           func()
		wantHeld     map[string]float64
		wantEnqueued []string
		wantOrphaned float64
	}{
		{
			sentence: "with no pod the gauge is 0 in every bucket",
			do:       func() {},
			wantHeld: map[string]float64{"lt_1m": 0, "lt_10m": 0, "lt_1h": 0, "ge_1h": 0},
		},
		{
			sentence: "two new pods of a live workflow and one of a gone workflow raise it, each in its age bucket",
			do: func() {
				add(cached("new", "live", "live-uid", 10*time.Second))
				add(cached("older", "live", "live-uid", 2*time.Hour))
				add(cached("orphan", "gone", "gone-uid", 5*time.Minute))
			},
			wantHeld:     map[string]float64{"lt_1m": 1, "lt_10m": 1, "lt_1h": 0, "ge_1h": 1},
			wantEnqueued: []string{"orphan"},
		},
		{
			sentence: "the orphan released by its key's pass leaves the gauge at the next sweep, counted as orphaned",
			do: func() {
				if err := f.r.ReleaseOrphans(context.Background(), "ns/gone"); err != nil {
					t.Fatal(err)
				}
				syncFromServer()
			},
			wantHeld:     map[string]float64{"lt_1m": 1, "lt_10m": 0, "lt_1h": 0, "ge_1h": 1},
			wantOrphaned: 1,
		},
		{
			sentence: "the live workflow's pods released once it is gone bring it back to 0",
			do: func() {
				if err := f.workflows.Delete(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "ns", UID: "live-uid"}}); err != nil {
					t.Fatal(err)
				}
				if err := f.r.ReleaseOrphans(context.Background(), "ns/live"); err != nil {
					t.Fatal(err)
				}
				syncFromServer()
			},
			wantHeld:     map[string]float64{"lt_1m": 0, "lt_10m": 0, "lt_1h": 0, "ge_1h": 0},
			wantOrphaned: 3,
		},
	} {
		f.enqueued = nil
		step.do()
		f.r.sweepOnce()
		for bucket, want := range step.wantHeld {
			if got := testutil.ToFloat64(f.r.metrics.heldPods.WithLabelValues(bucket)); got != want {
				t.Errorf("%s: wfguard_pods_holding_finalizer{age=%q} = %v, want %v", step.sentence, bucket, got, want)
			}
		}
		if n := testutil.CollectAndCount(f.r.metrics.heldPods); n != len(ageBuckets) {
			t.Errorf("%s: %d series of wfguard_pods_holding_finalizer, want one per age bucket", step.sentence, n)
		}
		if !slices.Equal(f.enqueued, step.wantEnqueued) {
			t.Errorf("%s: the sweep enqueued %v, want %v", step.sentence, f.enqueued, step.wantEnqueued)
		}
		if got := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(releaseOrphaned)); got != step.wantOrphaned {
			t.Errorf("%s: wfguard_pod_finalizers_released_total{reason=orphaned} = %v, want %v", step.sentence, got, step.wantOrphaned)
		}
		for _, other := range []string{releasePersisted, releaseDeleting, releaseDisabled} {
			if got := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(other)); got != 0 {
				t.Errorf("%s: wfguard_pod_finalizers_released_total{reason=%q} = %v, want 0 (only orphans were released)", step.sentence, other, got)
			}
		}
	}
}
