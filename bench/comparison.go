package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// ComparisonRow is one figure side by side: wfguard, stock argo and the raw clients, minimal and making
// the pipeline's writes ("-" where it does not apply or was not run).
type ComparisonRow struct {
	Figure      string `json:"figure"`
	WFGuard     string `json:"wfguard"`
	Argo        string `json:"argo"`
	Raw         string `json:"raw"`
	RawPipeline string `json:"rawPipeline"`
}

const notApplicable = "-"

// comparison builds the table from the scenario results.
func (r *Report) comparison() []ComparisonRow {
	var rows []ComparisonRow
	// perRaw adds a row whose wfguard and argo cells come from f (ok false: "-"), and the raw clients' from
	// raw and pipeline.
	perRaw := func(figure, raw, pipeline string, f func(c string) (string, bool)) {
		row := ComparisonRow{Figure: figure, WFGuard: notApplicable, Argo: notApplicable, Raw: raw, RawPipeline: pipeline}
		if v, ok := f(ControllerWFGuard); ok {
			row.WFGuard = v
		}
		if v, ok := f(ControllerArgo); ok {
			row.Argo = v
		}
		rows = append(rows, row)
	}
	per := func(figure, raw string, f func(c string) (string, bool)) { perRaw(figure, raw, notApplicable, f) }
	p50p99 := func(l Latencies) string { return fmt.Sprintf("%.1f / %.1f ms (n=%d)", l.P50Ms, l.P99Ms, l.Count) }

	per("scheduling latency p50 / p99", notApplicable, func(c string) (string, bool) {
		l := r.Latency[c]
		return p50p99AllOf(l, p50p99), l != nil
	})
	if t := r.Throughput; t != nil {
		raw, pipe := t.Raw, t.RawPipeline
		tp := func(f func(ControllerThroughput) string) func(string) (string, bool) {
			return func(c string) (string, bool) {
				ct := t.Controllers[c]
				if ct == nil {
					return "", false
				}
				return f(*ct), true
			}
		}
		pct := func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
		perRaw("throughput workflows/s", fmt.Sprintf("%.2f", raw.WorkflowsPerSec), fmt.Sprintf("%.2f", pipe.WorkflowsPerSec),
			tp(func(ct ControllerThroughput) string { return fmt.Sprintf("%.2f", ct.WorkflowsPerSec) }))
		perRaw("throughput pods/s", fmt.Sprintf("%.1f", raw.PodsPerSec), fmt.Sprintf("%.1f", pipe.PodsPerSec),
			tp(func(ct ControllerThroughput) string { return fmt.Sprintf("%.1f", ct.PodsPerSec) }))
		if len(pipe.Rounds) > 0 {
			byRound := func(rs []Round, f func(Round) string) string {
				var cells []string
				for _, r := range rs {
					cells = append(cells, fmt.Sprintf("%s (#%d)", f(r), r.Position))
				}
				return strings.Join(cells, ", ")
			}
			podsPerSec := func(r Round) string { return fmt.Sprintf("%.1f", r.PodsPerSec) }
			hops := func(r Round) string { return fmt.Sprintf("%.0f/%.0f", r.HopP50Ms, r.HopP99Ms) }
			perRaw("pods/s by round (#: place in the round)", byRound(raw.Rounds, podsPerSec), byRound(pipe.Rounds, podsPerSec),
				tp(func(ct ControllerThroughput) string { return byRound(ct.Rounds, podsPerSec) }))
			perRaw("hop p50/p99 ms by round", byRound(raw.Rounds, hops), byRound(pipe.Rounds, hops),
				tp(func(ct ControllerThroughput) string { return byRound(ct.Rounds, hops) }))
			apiCPU := func(r Round) string { return fmt.Sprintf("%.1f", r.APIServerCPUSeconds) }
			perRaw("API server CPU s by round", byRound(raw.Rounds, apiCPU), byRound(pipe.Rounds, apiCPU),
				tp(func(ct ControllerThroughput) string { return byRound(ct.Rounds, apiCPU) }))
		}
		perRaw("throughput ratio to raw (pipeline writes)", notApplicable, "100%", tp(func(ct ControllerThroughput) string { return pct(ct.PipelineRatio) }))
		perRaw("throughput ratio to raw (minimum)", "100%", pct(ratioOf(pipe.PodsPerSec, raw.PodsPerSec)), tp(func(ct ControllerThroughput) string { return pct(ct.Ratio) }))
		perRaw("hop latency under load p50 / p99", p50p99(raw.HopLatency), p50p99(pipe.HopLatency), tp(func(ct ControllerThroughput) string { return p50p99(ct.HopLatency) }))
		perRaw("hop latency ratio to raw (pipeline writes) p50 / p99", notApplicable, "1.00× / 1.00×", tp(func(ct ControllerThroughput) string {
			return fmt.Sprintf("%.2f× / %.2f×", ct.HopP50Ratio, ct.HopP99Ratio)
		}))
		perRaw("writes per pod", fmt.Sprintf("%.2f", raw.WritesPerPod), fmt.Sprintf("%.2f", pipe.WritesPerPod),
			tp(func(ct ControllerThroughput) string { return fmt.Sprintf("%.2f", ct.WritesPerPod) }))
		per("CPU s per 1,000 pods (controller process)", notApplicable, tp(func(ct ControllerThroughput) string { return fmt.Sprintf("%.2f", ct.CPUSecondsPer1000) }))
		processes := map[string]bool{}
		for _, s := range append([]RunStats{raw, pipe}, controllerStats(t)...) {
			for name := range s.MachineCPUSeconds {
				processes[name] = true
			}
		}
		pods := t.podsMeasured()
		for _, name := range sorted(processes) {
			cell := func(s RunStats) string { return machineCPUCell(s, name, pods) }
			perRaw("CPU s per 1,000 pods (cores busy): "+name, cell(raw), cell(pipe), tp(func(ct ControllerThroughput) string { return cell(ct.RunStats) }))
		}
		// The sum says what a subject's pods cost the whole machine; while every subject keeps its cores
		// busy, the throughput ratio is the inverse of the ratio of these sums (docs/performance.md). Every
		// subject runs the same pods, so the ratio of totals is the ratio per pod.
		controllerTotal := func(ct ControllerThroughput) string { return totalCPUCell(ct.RunStats, ct.CPUSeconds, pods) }
		perRaw("CPU s per 1,000 pods (cores busy): all, the controller's included", totalCPUCell(raw, 0, pods), totalCPUCell(pipe, 0, pods), tp(controllerTotal))
		pipeTotal, pipeOK := totalCPU(pipe, 0)
		toPipeline := func(s RunStats, controller float64) string {
			total, ok := totalCPU(s, controller)
			if !ok || !pipeOK || pipeTotal <= 0 {
				return notApplicable
			}
			return fmt.Sprintf("%.2f×", total/pipeTotal)
		}
		perRaw("CPU per pod, all processes, ratio to raw (pipeline writes)", toPipeline(raw, 0), toPipeline(pipe, 0),
			tp(func(ct ControllerThroughput) string { return toPipeline(ct.RunStats, ct.CPUSeconds) }))
		load := func(s RunStats) string { return apiServerLoadCell(s.APIServer, pods) }
		perRaw("API server served per pod: requests / watch events / watch KiB", load(raw), load(pipe),
			tp(func(ct ControllerThroughput) string { return load(ct.RunStats) }))
		calls := map[string]bool{}
		for _, s := range append([]RunStats{raw, pipe}, controllerStats(t)...) {
			for _, c := range s.Calls {
				calls[c.Call] = true
			}
		}
		for _, call := range sorted(calls) {
			cell := func(s []APICall) string { return fmt.Sprintf("%.2f", perPod(s, call)) }
			perRaw("API calls per pod: "+call, cell(raw.Calls), cell(pipe.Calls), tp(func(ct ControllerThroughput) string { return cell(ct.Calls) }))
		}
	}
	if len(r.LateResults) > 0 {
		late := func(f func(*LateResultsResult) string) func(string) (string, bool) {
			return func(c string) (string, bool) {
				l := r.LateResults[c]
				if l == nil {
					return "", false
				}
				return f(l), true
			}
		}
		per(fmt.Sprintf("late results (%.0f s watch delay): outputs lost", r.Sizes.LateResultDelaySecs), notApplicable,
			late(func(l *LateResultsResult) string {
				return fmt.Sprintf("%d of %d pods", l.SucceededWithoutOutputs, l.Pods)
			}))
		per("late results: time to finish", notApplicable, late(func(l *LateResultsResult) string { return fmt.Sprintf("%.1f s", l.Run.Seconds) }))
		per("late results: workflow phases", notApplicable, late(func(l *LateResultsResult) string { return phaseSummary(l.Run.Phases) }))
	}
	if len(r.Actions) > 0 {
		act := func(f func(*ActionsResult) Latencies) func(string) (string, bool) {
			return func(c string) (string, bool) {
				a := r.Actions[c]
				if a == nil {
					return "", false
				}
				return p50p99(f(a)), true
			}
		}
		// The raw client's floor (actionsRaw), where it ran.
		raw := func(f func(*ActionsResult) Latencies) string {
			if r.RawActions == nil {
				return notApplicable
			}
			return p50p99(f(r.RawActions))
		}
		suspend, resume := func(a *ActionsResult) Latencies { return a.Suspend }, func(a *ActionsResult) Latencies { return a.Resume }
		suspendSeen, resumeSeen := func(a *ActionsResult) Latencies { return a.SuspendVisible }, func(a *ActionsResult) Latencies { return a.ResumeVisible }
		per("suspend p50 / p99, to the client's return¹", raw(suspend), act(suspend))
		per("resume p50 / p99, to the client's return¹", raw(resume), act(resume))
		per("suspend p50 / p99, to spec.suspend seen set", raw(suspendSeen), act(suspendSeen))
		per("resume p50 / p99, to spec.suspend seen unset", raw(resumeSeen), act(resumeSeen))
		per("suspend/resume requests failed", notApplicable, func(c string) (string, bool) {
			a := r.Actions[c]
			if a == nil {
				return "", false
			}
			return fmt.Sprintf("%d", a.Failed), true
		})
	}
	if len(r.Memory) > 0 {
		mem := func(f func(*MemoryResult) string) func(string) (string, bool) {
			return func(c string) (string, bool) {
				m := r.Memory[c]
				if m == nil {
					return "", false
				}
				return f(m), true
			}
		}
		per(fmt.Sprintf("heap in use, %d workflows cached (baseline)", r.Sizes.MemoryWorkflows), notApplicable, mem(func(m *MemoryResult) string {
			return fmt.Sprintf("%s (%s)", mibOrNA(m.LoadedHeapInuseBytes), mibOrNA(m.BaselineHeapInuseBytes))
		}))
		per(fmt.Sprintf("RSS, %d workflows cached (baseline)", r.Sizes.MemoryWorkflows), notApplicable, mem(func(m *MemoryResult) string {
			return fmt.Sprintf("%s (%s)", mib(m.LoadedRSSBytes), mib(m.BaselineRSSBytes))
		}))
		per(fmt.Sprintf("heap / RSS per workflow, %d finished pods in the namespace", r.Sizes.MemoryWorkflows*r.Sizes.MemoryPodsPerWorkflow), notApplicable,
			mem(func(m *MemoryResult) string {
				return fmt.Sprintf("%s / %.1f KiB", kibOrNA(m.HeapBytesPerWorkflow, m.LoadedHeapInuseBytes), m.RSSBytesPerWorkflow/1024)
			}))
		per("pods cached with the memory scenario loaded", notApplicable, mem(func(m *MemoryResult) string {
			if m.PodsCached == nil {
				return "n/a"
			}
			return fmt.Sprintf("%.0f", *m.PodsCached)
		}))
	}
	rows = append(rows, r.scaleRows()...)
	return rows
}

func p50p99AllOf(l *LatencyResult, f func(Latencies) string) string {
	if l == nil {
		return ""
	}
	return f(l.All)
}

func controllerStats(t *ThroughputResult) []RunStats {
	var out []RunStats
	for _, c := range sorted(t.Controllers) {
		out = append(out, t.Controllers[c].RunStats)
	}
	return out
}

func sorted[V any](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}

func phaseSummary[K ~string](phases map[K]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		name := string(k)
		if name == "" {
			name = "unfinished"
		}
		parts = append(parts, fmt.Sprintf("%d %s", phases[k], name))
	}
	if len(parts) == 0 {
		return notApplicable
	}
	return strings.Join(parts, ", ")
}

// writeComparison prints the rows as an aligned table with a footnote on what "return" means.
func writeComparison(w io.Writer, rows []ComparisonRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\t%s\t%s\t%s (minimum)\t%s (pipeline writes)\n", ControllerWFGuard, ControllerArgo, rawClient, rawClient)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Figure, r.WFGuard, r.Argo, r.Raw, r.RawPipeline)
	}
	tw.Flush()
	for _, r := range rows {
		if strings.HasSuffix(r.Figure, "¹") {
			fmt.Fprintf(w, "¹ wfguard: %s (where `wfguard action` returns); argo: %s.\n", howWFGuard, howArgo)
			return
		}
	}
}

// totalCPU is a subject's CPU time over its runs: every measured process's and its controller's (the raw
// clients run inside the bench process). False when the run measured no process.
func totalCPU(s RunStats, controller float64) (float64, bool) {
	if len(s.MachineCPUSeconds) == 0 {
		return 0, false
	}
	total := controller
	for _, name := range sorted(s.MachineCPUSeconds) {
		total += s.MachineCPUSeconds[name]
	}
	return total, true
}

// totalCPUCell is totalCPU as a cpuCell.
func totalCPUCell(s RunStats, controller float64, pods int) string {
	total, ok := totalCPU(s, controller)
	return cpuCell(total, ok, s, pods)
}

// machineCPUCell is one process's CPU time over a subject's runs as a cpuCell.
func machineCPUCell(s RunStats, process string, pods int) string {
	cpu, ok := s.MachineCPUSeconds[process]
	return cpuCell(cpu, ok, s, pods)
}

// cpuCell is CPU time over a subject's runs per 1,000 pods, and the cores it kept busy on average ("-" when
// not measured).
func cpuCell(cpu float64, measured bool, s RunStats, pods int) string {
	if !measured || pods <= 0 || s.Seconds <= 0 {
		return notApplicable
	}
	return fmt.Sprintf("%.2f (%.2f)", cpu*1000/float64(pods), cpu/s.Seconds)
}

// apiServerLoadCell is a subject's API server load per pod ("-" when not measured).
func apiServerLoadCell(l *APIServerLoad, pods int) string {
	if l == nil || pods <= 0 {
		return notApplicable
	}
	n := float64(pods)
	return fmt.Sprintf("%.2f / %.2f / %.1f", l.Requests/n, l.WatchEvents/n, l.WatchEventBytes/1024/n)
}
