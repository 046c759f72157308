package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// ChainTimes splits a chain workflow's time from submit to completion, as the measuring observer saw it,
// into what each party owns, in milliseconds: the controller (or raw client) starts the workflow, hops
// from one pod to the next and completes the workflow; the simulated node and the API server run each pod.
// A throughput gap between subjects that ran the same node shows up in the controller's parts.
type ChainTimes struct {
	// StartMs is submit → the first pod seen.
	StartMs float64 `json:"startMs"`
	// PodsMs is the sum over the chain's pods of pod seen → pod Succeeded and its result completed.
	PodsMs float64 `json:"podsMs"`
	// HopsMs is the sum over the chain's hops of predecessor done → successor pod seen.
	HopsMs float64 `json:"hopsMs"`
	// FinishMs is the last pod done → the workflow seen completed.
	FinishMs float64 `json:"finishMs"`
}

// TotalMs is submit → completion.
func (c ChainTimes) TotalMs() float64 { return c.StartMs + c.PodsMs + c.HopsMs + c.FinishMs }

// ChainBreakdown is a run's chain times: the mean over its workflows, and the workflow that completed
// last, whose time is the run's elapsed time.
type ChainBreakdown struct {
	Workflows int        `json:"workflows"`
	Mean      ChainTimes `json:"mean"`
	Slowest   ChainTimes `json:"slowest"`
}

// chainTimes breaks down the named chain workflows submitted at begin; workflows the observer did not see
// complete, with every pod done, are left out.
func (o *observer) chainTimes(begin time.Time, names []string) ChainBreakdown {
	o.mu.Lock()
	defer o.mu.Unlock()
	type podTimes struct{ added, done time.Time }
	byWorkflow := map[string][]podTimes{}
	for id, added := range o.podAdded {
		wf, _, ok := strings.Cut(o.nodeName[id], ".")
		if !ok {
			continue
		}
		done, ok1 := o.podDone[id]
		result, ok2 := o.resultOK[id]
		if !ok1 || !ok2 {
			byWorkflow[wf] = append(byWorkflow[wf], podTimes{added: added}) // an unfinished pod: not complete
			continue
		}
		byWorkflow[wf] = append(byWorkflow[wf], podTimes{added: added, done: later(done, result)})
	}
	var out ChainBreakdown
	var last time.Time
	for _, name := range names {
		completed, ok := o.wfDone[name]
		pods := byWorkflow[name]
		if !ok || len(pods) == 0 || slices.ContainsFunc(pods, func(p podTimes) bool { return p.done.IsZero() }) {
			continue
		}
		slices.SortFunc(pods, func(a, b podTimes) int { return a.added.Compare(b.added) })
		t := ChainTimes{StartMs: ms(pods[0].added.Sub(begin)), FinishMs: ms(completed.Sub(pods[len(pods)-1].done))}
		for i, p := range pods {
			t.PodsMs += ms(p.done.Sub(p.added))
			if i > 0 {
				t.HopsMs += ms(p.added.Sub(pods[i-1].done))
			}
		}
		out.Workflows++
		out.Mean = addChainTimes(out.Mean, t, 1)
		if completed.After(last) {
			last, out.Slowest = completed, t
		}
	}
	if out.Workflows > 0 {
		out.Mean = scaleChainTimes(out.Mean, 1/float64(out.Workflows))
	}
	return out
}

// mergeChainBreakdowns averages rounds' breakdowns, each mean weighted by its workflows; the slowest
// chain becomes the mean of the rounds' slowest.
func mergeChainBreakdowns(runs []ChainBreakdown) ChainBreakdown {
	var out ChainBreakdown
	rounds := 0
	for _, r := range runs {
		if r.Workflows == 0 {
			continue
		}
		out.Workflows += r.Workflows
		out.Mean = addChainTimes(out.Mean, r.Mean, float64(r.Workflows))
		out.Slowest = addChainTimes(out.Slowest, r.Slowest, 1)
		rounds++
	}
	if rounds > 0 {
		out.Mean = scaleChainTimes(out.Mean, 1/float64(out.Workflows))
		out.Slowest = scaleChainTimes(out.Slowest, 1/float64(rounds))
	}
	return out
}

func addChainTimes(a, b ChainTimes, weight float64) ChainTimes {
	return ChainTimes{StartMs: a.StartMs + weight*b.StartMs, PodsMs: a.PodsMs + weight*b.PodsMs,
		HopsMs: a.HopsMs + weight*b.HopsMs, FinishMs: a.FinishMs + weight*b.FinishMs}
}

func scaleChainTimes(a ChainTimes, f float64) ChainTimes { return addChainTimes(ChainTimes{}, a, f) }

// writeChains prints each subject's chain breakdown, controllers first, then the raw clients.
func (res *ThroughputResult) writeChains(w io.Writer, controllers []string) {
	type row struct {
		name  string
		chain *ChainBreakdown
	}
	var rows []row
	for _, c := range controllers {
		if t := res.Controllers[c]; t != nil && t.Chain != nil {
			rows = append(rows, row{c, t.Chain})
		}
	}
	if res.Raw.Chain != nil {
		rows = append(rows, row{string(subjectRawMinimum), res.Raw.Chain})
	}
	if res.RawPipeline.Chain != nil {
		rows = append(rows, row{string(subjectRawPipeline), res.RawPipeline.Chain})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "Where a chain's time goes in the throughput run (ms; mean over workflows | the last to complete):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  subject\tstart\tpods\thops\tfinish\ttotal\t|\tstart\tpods\thops\tfinish\ttotal\n")
	for _, r := range rows {
		m, s := r.chain.Mean, r.chain.Slowest
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t|\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", r.name,
			m.StartMs, m.PodsMs, m.HopsMs, m.FinishMs, m.TotalMs(), s.StartMs, s.PodsMs, s.HopsMs, s.FinishMs, s.TotalMs())
	}
	tw.Flush()
	fmt.Fprintln(w)
}
