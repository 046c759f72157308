package bench

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/extstatus"
)

// LateResultsResult is the throughput workload with the controller's task-result watch events delayed in
// its API proxy.
type LateResultsResult struct {
	DelaySeconds float64       `json:"delaySeconds"`
	Workflows    int           `json:"workflows"`
	Pods         int           `json:"pods"`
	Run          ControllerRun `json:"run"`
	// DirectReadsPerPod are wfguard's reads past the stale cache per pod (argo counts none).
	DirectReadsPerPod *float64 `json:"directReadsPerPod,omitempty"`
	// SucceededWithoutOutputs counts Succeeded pod nodes lacking their declared output: outputs lost.
	SucceededWithoutOutputs int `json:"succeededWithoutOutputs"`
}

// lateResultNodes is the chain length of the late-results workload.
const lateResultNodes = 3

func (e *env) lateResults(ctx context.Context, report *Report) error {
	report.LateResults = map[string]*LateResultsResult{}
	return e.eachController(func(c string) error {
		n, m := e.opts.LateResultWorkflows, lateResultNodes
		res := &LateResultsResult{DelaySeconds: e.opts.LateResultDelay.Seconds(), Workflows: n, Pods: n * m}
		done, err := e.controllerRun(ctx, c, chainRun{prefix: "bench-late-" + c, n: n, m: m, delay: e.opts.LateResultDelay})
		if err != nil {
			return err
		}
		run, ns := done.run, done.namespace
		res.Run = run
		if run.DirectReads != nil {
			perPod := *run.DirectReads / float64(n*m)
			res.DirectReadsPerPod = &perPod
		}
		if res.SucceededWithoutOutputs, err = e.succeededWithoutOutputs(ctx, ns); err != nil {
			return err
		}
		report.LateResults[c] = res
		return nil
	})
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
