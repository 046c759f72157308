package controller

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/extstatus"
)

// The stale-cache guard, through a whole reconcile: a pass never starts from a cache copy older than the
// controller's own last write; it starts from what that write stored while it is held, and otherwise waits,
// quietly, for the write's echo.
func TestAPassNeverStartsFromACacheCopyOlderThanOurLastWrite(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		wrote    string // our last write's resourceVersion ("": none)
		echoed   bool   // the informer delivered that write (its stored object is no longer held)
		cached   string
		// wantSkipped: the pass was skipped and waits for the echo; wantOwnCopy: it started from our write.
		wantSkipped, wantOwnCopy bool
	}{
		{sentence: "with no write of ours the cache copy is reconciled", cached: "9"},
		{sentence: "a cache copy at our write is reconciled", wrote: "10", echoed: true, cached: "10"},
		{sentence: "a cache copy newer than our write (someone wrote since) is reconciled", wrote: "10", echoed: true, cached: "11"},
		{sentence: "a cache copy older than our write gives way to the object that write stored, counted", wrote: "10", cached: "9",
			wantOwnCopy: true},
		{sentence: "a cache copy older than our write once the echo came (the cache went back) is skipped quietly, counted, and waits for the echo",
			wrote: "10", echoed: true, cached: "9", wantSkipped: true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			f := newFixture(t, Options{}, succeeded(t, "10"))
			if tc.wrote != "" {
				f.c.recordWrite(succeeded(t, tc.wrote))
			}
			if tc.echoed {
				f.c.cacheCaughtUp(succeeded(t, tc.wrote))
			}
			f.cache(succeeded(t, tc.cached))

			requeue, err := f.c.reconcile(t.Context(), "ns/wf")
			if err != nil {
				t.Fatal(err)
			}
			if skipped := requeue == staleRequeue; skipped != tc.wantSkipped {
				t.Errorf("requeue %v: skipped %v, want %v", requeue, skipped, tc.wantSkipped)
			}
			_, waits := f.c.staleWaiters["ns/wf"]
			if skips := testutil.ToFloat64(f.c.metrics.staleSkips); waits != tc.wantSkipped || (skips == 1) != tc.wantSkipped {
				t.Errorf("waiting for the echo %v, stale skips counted %v; want skipped %v", waits, skips, tc.wantSkipped)
			}
			if own := testutil.ToFloat64(f.c.metrics.ownCopyPasses); (own == 1) != tc.wantOwnCopy {
				t.Errorf("passes from our own write counted %v, want one: %v", own, tc.wantOwnCopy)
			}
			if got := append(calls(f.dynamic), calls(f.kube)...); len(got) > 0 {
				t.Errorf("a pass over a settled completed workflow made calls %q", got)
			}
			if f.c.queue.Len() != 0 {
				t.Error("the key was queued again at once: nothing changed since")
			}
		})
	}
}

// A skip whose echo reached the cache before the pass noted that it waits for it is reconciled at once:
// otherwise the echo's handler, which ran first, found no waiter, and the key would wait for the requeue.
func TestASkipWhoseEchoAlreadyArrivedIsReconciledAtOnce(t *testing.T) {
	f := newFixture(t, Options{})
	f.c.recordWrite(succeeded(t, "10"))
	f.cache(succeeded(t, "10")) // the echo
	f.c.cacheCaughtUp(succeeded(t, "10"))

	f.c.skipStale("ns/wf", succeeded(t, "9"))
	if f.c.queue.Len() != 1 {
		t.Errorf("queued %d keys, want ns/wf at once", f.c.queue.Len())
	}
}

// succeeded is workflow ns/wf completed Succeeded with nothing left to settle, as stored at rv.
func succeeded(t testing.TB, rv string) *unstructured.Unstructured {
	t.Helper()
	wf := running()
	wf.Status.Phase = wfv1.WorkflowSucceeded
	wf.Status.FinishedAt = metav1.NewTime(t0.Add(-time.Minute))
	wf.Labels = map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}
	return workflow(t, wf, extstatus.Extensions{}, rv)
}
