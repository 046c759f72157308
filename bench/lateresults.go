package bench

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
)

// LateResultsResult is the throughput workload with the controller's task-result watch events delayed.
type LateResultsResult struct {
	DelaySeconds float64  `json:"delaySeconds"`
	Workflows    int      `json:"workflows"`
	Pods         int      `json:"pods"`
	Run          RunStats `json:"run"`
	// DirectReadsPerPod are reads past the stale cache per pod.
	DirectReadsPerPod float64 `json:"directReadsPerPod"`
	// SucceededWithoutOutputs counts Succeeded pod nodes lacking their declared output; must be 0.
	SucceededWithoutOutputs int `json:"succeededWithoutOutputs"`
}

// lateResultNodes is the chain length of the late-results workload.
const lateResultNodes = 3

func delayResults(delay time.Duration) func(string, cache.ListerWatcher) cache.ListerWatcher {
	return func(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
		if resource != "workflowtaskresults" {
			return lw
		}
		return faultinject.DelayWatchEvents(lw, delay, nil)
	}
}

func (e *env) lateResults(ctx context.Context, report *Report) error {
	n, m := e.opts.LateResultWorkflows, lateResultNodes
	res := &LateResultsResult{DelaySeconds: e.opts.LateResultDelay.Seconds(), Workflows: n, Pods: n * m}
	run, directReads, ns, err := e.controllerRun(ctx, "bench-late", n, m, e.opts.LateResultDelay)
	if err != nil {
		return err
	}
	res.Run, res.DirectReadsPerPod = run, directReads/float64(n*m)
	if res.SucceededWithoutOutputs, err = e.succeededWithoutOutputs(ctx, ns); err != nil {
		return err
	}
	report.LateResults = res
	return nil
}

// succeededWithoutOutputs reads every workflow from the server and counts Succeeded pod nodes whose
// declared output is missing or empty.
func (e *env) succeededWithoutOutputs(ctx context.Context, ns string) (int, error) {
	list, err := e.argo.ArgoprojV1alpha1().Workflows(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing workflows in %s: %w", ns, err)
	}
	missing := 0
	for _, wf := range list.Items {
		if err := extstatus.InflateNodes(&wf); err != nil {
			return 0, err
		}
		for _, node := range wf.Status.Nodes {
			if node.Type != wfv1.NodeTypePod || node.Phase != wfv1.NodeSucceeded {
				continue
			}
			if !hasOutput(node.Outputs) {
				missing++
			}
		}
	}
	return missing, nil
}

func hasOutput(o *wfv1.Outputs) bool {
	if o == nil {
		return false
	}
	for _, p := range o.Parameters {
		if p.Name == workload.OutputParameter && p.Value != nil && p.Value.String() == "ok" {
			return true
		}
	}
	return false
}
