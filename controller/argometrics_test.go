package controller_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/argometrics"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// argoRecorder records what the controller reports to argo's metrics, and passes it on to the real ones.
type argoRecorder struct {
	*argometrics.Metrics
	mu         sync.Mutex
	entered    []string // "from→to"
	podChanges map[string][]argometrics.NodeState
	operations int
	busy       int
}

func (r *argoRecorder) WorkflowEntered(wf *wfv1.Workflow, from wfv1.WorkflowPhase) {
	r.mu.Lock()
	r.entered = append(r.entered, string(from)+"→"+string(wf.Status.Phase))
	r.mu.Unlock()
	r.Metrics.WorkflowEntered(wf, from)
}

func (r *argoRecorder) PodNodeChanged(namespace string, before, after argometrics.NodeState) {
	r.mu.Lock()
	r.podChanges[string(before.Phase)] = append(r.podChanges[string(before.Phase)], after)
	r.mu.Unlock()
	r.Metrics.PodNodeChanged(namespace, before, after)
}

func (r *argoRecorder) OperationDone(d time.Duration) {
	r.mu.Lock()
	r.operations++
	r.mu.Unlock()
	r.Metrics.OperationDone(d)
}

func (r *argoRecorder) WorkerBusy(queue string) {
	r.mu.Lock()
	r.busy++
	r.mu.Unlock()
	r.Metrics.WorkerBusy(queue)
}

func (r *argoRecorder) WorkerFree(queue string) {
	r.mu.Lock()
	r.busy--
	r.mu.Unlock()
	r.Metrics.WorkerFree(queue)
}

const twoSteps = `
metadata: {name: two-steps}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - [{name: a, template: ok}]
    - [{name: b, template: ok}]
  - name: ok
    container: {image: alpine, command: ["true"]}
`

func TestThePipelineReportsEachPersistedPhaseChangeToArgosMetricsOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	real, err := argometrics.New(reg, argometrics.BuildInfo{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &argoRecorder{Metrics: real, podChanges: map[string][]argometrics.NodeState{}}
	ns := harness.Namespace(t, cp.Config(), "argomet")
	h := &env{t: t, ns: ns, argo: versioned.NewForConfigOrDie(cp.Config())}
	h.run = harness.Start(t, cp.Config(), controller.Options{Namespace: ns, Workers: 2, StatusFinalizer: true,
		Logger: slog.New(slog.DiscardHandler), ArgoMetrics: rec}, simnode.Options{Namespace: ns})
	wf := h.submit(twoSteps)
	if done := h.waitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow %s %q, want Succeeded", done.Status.Phase, done.Status.Message)
	}
	// The completion is visible before the pass that wrote it is reported; its report ends the workflow's story.
	waitFor(t, "the completion was reported", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Contains(rec.entered, "Running→Succeeded")
	})
	real.CountFrom(h.ctrl().WorkflowPhaseCounts, h.ctrl().PodPhaseCounts)
	waitFor(t, "the phase gauge read the cache's Succeeded workflow", func() bool {
		return gaugeValue(t, reg, "argo_workflows_gauge", "Succeeded") == 1
	})
	waitFor(t, "every worker that took a key freed it", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.busy == 0
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []string{"→Running", "Running→Succeeded"}; !slices.Equal(rec.entered, want) {
		t.Errorf("the workflow was reported entering %v, want %v once each", rec.entered, want)
	}
	if born := rec.podChanges[""]; len(born) > 0 {
		t.Errorf("pod nodes created by a pass were reported as changes (argo counts no birth): %v", born)
	}
	succeeded := 0
	for _, changes := range rec.podChanges {
		for _, after := range changes {
			if after.Phase == wfv1.NodeSucceeded {
				succeeded++
			}
		}
	}
	if succeeded != 2 {
		t.Errorf("pod nodes reported entering Succeeded: %d, want 2 (a and b); changes %v", succeeded, rec.podChanges)
	}
	if rec.operations < 3 {
		t.Errorf("passes observed: %d, want at least one per step and the completion", rec.operations)
	}
	if got := gaugeValue(t, reg, "argo_workflows_queue_adds_count", argometrics.WorkflowQueue); got < 1 {
		t.Errorf("argo_workflows_queue_adds_count{queue_name=workflow_queue} = %v, want the workflow queue's adds", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never: %s: %v", what, err)
	}
}

// gaugeValue is the value of the series of a gauge or counter whose one label has value.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == value {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
