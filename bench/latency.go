package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LatencyResult is scheduling latency: predecessor pod Succeeded + result complete → successor pod created.
type LatencyResult struct {
	Chain  Latencies `json:"chain"`
	FanOut Latencies `json:"fanOut"`
	All    Latencies `json:"all"`
}

// latency runs chains and fan-outs one workflow at a time, so the figure is the pipeline's own delay
// rather than queueing behind other workflows (throughput measures that).
func (e *env) latency(ctx context.Context, report *Report) error {
	report.Latency = map[string]*LatencyResult{}
	return e.eachController(func(c string) error {
		res, err := e.latencyOf(ctx, c)
		if err != nil {
			return err
		}
		report.Latency[c] = res
		return nil
	})
}

func (e *env) latencyOf(ctx context.Context, c string) (*LatencyResult, error) {
	obs, err := e.observedNamespace(ctx, "bench-latency-"+c)
	if err != nil {
		return nil, err
	}
	ns := obs.namespace
	defer obs.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	p, err := e.startController(ctx, c, ns, processOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop() }()
	if err := e.warmUp(ctx, p, obs); err != nil {
		return nil, err
	}

	var chains, fanOuts []*wfv1.Workflow
	for i := range e.opts.LatencyChains {
		chains = append(chains, chainWorkflow(fmt.Sprintf("chain-%03d", i), e.opts.ChainLength))
	}
	for i := range e.opts.LatencyFanOuts {
		fanOuts = append(fanOuts, fanOutWorkflow(fmt.Sprintf("fanout-%03d", i), e.opts.FanOutWidth))
	}
	for _, wf := range append(append([]*wfv1.Workflow{}, chains...), fanOuts...) {
		if _, err := e.argo.ArgoprojV1alpha1().Workflows(ns).Create(ctx, wf, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("submitting %s: %w", wf.Name, err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := obs.waitWorkflows(waitCtx, []string{wf.Name})
		cancel()
		if err != nil {
			return nil, p.failed(fmt.Errorf("workflow %s: %w", wf.Name, err))
		}
	}
	if err := allSucceeded(obs, names(chains), names(fanOuts)); err != nil {
		return nil, err
	}
	isChain := func(n string) (string, bool) {
		p, ok := predecessor(n)
		return p, ok && strings.HasPrefix(n, "chain-")
	}
	isFanOut := func(n string) (string, bool) {
		p, ok := predecessor(n)
		return p, ok && strings.HasPrefix(n, "fanout-")
	}
	return &LatencyResult{
		Chain:  summarize(obs.schedulingLatencies(isChain)),
		FanOut: summarize(obs.schedulingLatencies(isFanOut)),
		All:    summarize(obs.schedulingLatencies(predecessor)),
	}, nil
}

func names(wfs []*wfv1.Workflow) []string {
	out := make([]string, 0, len(wfs))
	for _, wf := range wfs {
		out = append(out, wf.Name)
	}
	return out
}

// noneFailed refuses to report numbers of a run where a completed workflow did not succeed; it leaves
// the unfinished ones to the caller.
func noneFailed(obs *observer, names []string) error {
	return succeeded(obs, names, true)
}

// allSucceeded refuses to report numbers of a run whose workflows did not all succeed.
func allSucceeded(obs *observer, groups ...[]string) error {
	for _, g := range groups {
		if err := succeeded(obs, g, false); err != nil {
			return err
		}
	}
	return nil
}

// succeeded checks that every named workflow succeeded, or with unfinishedToo is still unfinished.
func succeeded(obs *observer, names []string, unfinishedToo bool) error {
	phases := obs.phases(names)
	ok := phases[wfv1.WorkflowSucceeded]
	if unfinishedToo {
		ok += phases[""]
	}
	if ok != len(names) {
		return fmt.Errorf("not every benchmark workflow succeeded: %v", phases)
	}
	return nil
}
