package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what `make bench` prints and stores as JSON.
type Report struct {
	Date        time.Time          `json:"date"`
	Machine     Machine            `json:"machine"`
	Sizes       Sizes              `json:"sizes"`
	Latency     *LatencyResult     `json:"latency,omitempty"`
	Throughput  *ThroughputResult  `json:"throughput,omitempty"`
	Actions     *ActionsResult     `json:"actions,omitempty"`
	Orphans     *OrphansResult     `json:"orphans,omitempty"`
	LateResults *LateResultsResult `json:"lateResults,omitempty"`
	Memory      *MemoryResult      `json:"memory,omitempty"`
	Targets     []Target           `json:"targets"`
}

// Machine describes where the numbers were taken.
type Machine struct {
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel,omitempty"`
	MemoryKiB int64  `json:"memoryKiB,omitempty"`
}

// Sizes are the scenario sizes of the run.
type Sizes struct {
	Workers             int     `json:"workers"`
	CoalesceWindowSecs  float64 `json:"statusCoalesceWindowSeconds"`
	LatencyChains       int     `json:"latencyChains"`
	ChainLength         int     `json:"chainLength"`
	LatencyFanOuts      int     `json:"latencyFanOuts"`
	FanOutWidth         int     `json:"fanOutWidth"`
	ThroughputWorkflows int     `json:"throughputWorkflows"`
	ThroughputNodes     int     `json:"throughputNodes"`
	Actions             int     `json:"actions"`
	OrphanPods          int     `json:"orphanPods"`
	LateResultWorkflows int     `json:"lateResultWorkflows"`
	LateResultDelaySecs float64 `json:"lateResultDelaySeconds"`
	MemoryWorkflows     int     `json:"memoryWorkflows"`
}

// Target is one DESIGN.md performance target and whether this run met it.
type Target struct {
	Name     string `json:"name"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	// Verdict is met, not met, reported (no threshold) or not run.
	Verdict string `json:"verdict"`
}

const (
	verdictMet      = "met"
	verdictNotMet   = "NOT MET"
	verdictReported = "reported"
	verdictNotRun   = "not run"
)

func newReport(o Options) *Report {
	return &Report{Date: time.Now().UTC(), Machine: machine(), Sizes: Sizes{
		Workers: o.Workers, CoalesceWindowSecs: o.CoalesceWindow.Seconds(), LatencyChains: o.LatencyChains, ChainLength: o.ChainLength, LatencyFanOuts: o.LatencyFanOuts,
		FanOutWidth: o.FanOutWidth, ThroughputWorkflows: o.ThroughputWorkflows, ThroughputNodes: o.ThroughputNodes,
		Actions: o.Actions, OrphanPods: o.OrphanPods, LateResultWorkflows: o.LateResultWorkflows,
		LateResultDelaySecs: o.LateResultDelay.Seconds(), MemoryWorkflows: o.MemoryWorkflows}}
}

func verdict(ok bool) string {
	if ok {
		return verdictMet
	}
	return verdictNotMet
}

// evaluate compares the measured figures with DESIGN.md's targets.
func (r *Report) evaluate() {
	add := func(name, target, measured, v string) {
		r.Targets = append(r.Targets, Target{Name: name, Target: target, Measured: measured, Verdict: v})
	}
	if l := r.Latency; l != nil && l.All.Count > 0 {
		add("scheduling latency", "p50 < 50 ms, p99 < 250 ms", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (n=%d)", l.All.P50Ms, l.All.P99Ms, l.All.Count),
			verdict(l.All.P50Ms < 50 && l.All.P99Ms < 250))
	} else {
		add("scheduling latency", "p50 < 50 ms, p99 < 250 ms", "-", verdictNotRun)
	}
	if t := r.Throughput; t != nil {
		add("throughput", "≥ 90% of a raw client's rate", fmt.Sprintf("%.0f%% (%.1f vs %.1f pods/s)", 100*t.Ratio, t.Controller.PodsPerSec, t.Raw.PodsPerSec),
			verdict(t.Ratio >= 0.9))
		// The controller's own counts; the transport-level totals below also include client-go's retries of
		// requests the API server throttled (429), which the controller never sees.
		pods := float64(max(t.Pods, 1))
		creates, releases := t.Controller.Counters["wfguard_pods_created_total"]/pods, t.Controller.Counters["wfguard_pod_finalizers_released_total{reason=persisted}"]/pods
		updates, rawUpdates := perPod(t.Controller.Calls, "update workflows"), perPod(t.Raw.Calls, "update workflows")
		add("API calls per pod", "1 pod create, 1 finalizer release, amortized workflow updates, no cache bypass",
			fmt.Sprintf("%.2f creates, %.2f releases (%.2f pod patches on the wire), %.2f workflow updates (raw %.2f), %.0f direct reads",
				creates, releases, perPod(t.Controller.Calls, "patch pods"), updates, rawUpdates, t.DirectReads),
			verdict(creates <= 1 && releases <= 1 && t.DirectReads == 0))
	} else {
		add("throughput", "≥ 90% of a raw client's rate", "-", verdictNotRun)
		add("API calls per pod", "1 pod create, 1 finalizer release, amortized workflow updates, no cache bypass", "-", verdictNotRun)
	}
	if a := r.Actions; a != nil {
		add("WorkflowAction latency", fmt.Sprintf("p99 < 500 ms with %d concurrent", a.Concurrent),
			fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (n=%d, failed %d)", a.All.P50Ms, a.All.P99Ms, a.All.Count, a.Failed), verdict(a.All.P99Ms < 500 && a.Failed == 0))
	} else {
		add("WorkflowAction latency", "p99 < 500 ms with 50 concurrent", "-", verdictNotRun)
	}
	if o := r.Orphans; o != nil {
		add("orphan sweep", "≤ 1.25× a raw patch loop", fmt.Sprintf("%.2f× (%d pods: %.2f s vs %.2f s)", o.Ratio, o.Pods, o.ControllerSeconds, o.RawSeconds),
			verdict(o.Ratio <= 1.25))
	} else {
		add("orphan sweep", "≤ 1.25× a raw patch loop", "-", verdictNotRun)
	}
	if l := r.LateResults; l != nil {
		add("late results: no output lost", "0 nodes Succeeded without outputs", fmt.Sprintf("%d (%.2f direct reads/pod, %.2f pods/s under a %.0f s delay)",
			l.SucceededWithoutOutputs, l.DirectReadsPerPod, l.Run.PodsPerSec, l.DelaySeconds), verdict(l.SucceededWithoutOutputs == 0))
	} else {
		add("late results: no output lost", "0 nodes Succeeded without outputs", "-", verdictNotRun)
	}
	if m := r.Memory; m != nil {
		add("controller memory", fmt.Sprintf("report with %d workflows cached", m.Workflows),
			fmt.Sprintf("heap in use %s (baseline %s), RSS %s, %.1f KiB/workflow", mib(m.LoadedHeapInuseBytes), mib(m.BaselineHeapInuseBytes),
				mib(m.LoadedRSSBytes), m.HeapBytesPerWorkflow/1024), verdictReported)
	} else {
		add("controller memory", "report with 10,000 workflows cached", "-", verdictNotRun)
	}
}

func perPod(calls []APICall, call string) float64 {
	for _, c := range calls {
		if c.Call == call {
			return c.PerPod
		}
	}
	return 0
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// Met reports whether no measured target was missed.
func (r *Report) Met() bool {
	for _, t := range r.Targets {
		if t.Verdict == verdictNotMet {
			return false
		}
	}
	return true
}

// WriteJSON stores the report.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText prints the human report.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "wfguard bench — %s — %s/%s, %d CPUs (%s), %s, %d KiB RAM\n\n", r.Date.Format(time.RFC3339),
		r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.CPUModel, r.Machine.GoVersion, r.Machine.MemoryKiB)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if l := r.Latency; l != nil {
		fmt.Fprintf(tw, "scheduling latency\tn\tp50\tp90\tp99\tmax\n")
		for _, row := range []struct {
			name string
			l    Latencies
		}{{"  chain", l.Chain}, {"  fan-out", l.FanOut}, {"  all", l.All}} {
			fmt.Fprintf(tw, "%s\t%d\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\n", row.name, row.l.Count, row.l.P50Ms, row.l.P90Ms, row.l.P99Ms, row.l.MaxMs)
		}
		fmt.Fprintln(tw)
	}
	if a := r.Actions; a != nil {
		fmt.Fprintf(tw, "WorkflowAction latency (%d at once)\tn\tp50\tp90\tp99\tmax\n", a.Concurrent)
		for _, row := range []struct {
			name string
			l    Latencies
		}{{"  suspend", a.Suspend}, {"  resume", a.Resume}, {"  all", a.All}} {
			fmt.Fprintf(tw, "%s\t%d\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\n", row.name, row.l.Count, row.l.P50Ms, row.l.P90Ms, row.l.P99Ms, row.l.MaxMs)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if t := r.Throughput; t != nil {
		fmt.Fprintf(w, "throughput: %d workflows × %d pods\n", t.Workflows, t.Pods/max(t.Workflows, 1))
		fmt.Fprintf(w, "  controller %.2f s  %.2f workflows/s  %.1f pods/s  %.2f writes/pod\n", t.Controller.Seconds, t.Controller.WorkflowsPerSec, t.Controller.PodsPerSec, t.Controller.WritesPerPod)
		fmt.Fprintf(w, "  raw client %.2f s  %.2f workflows/s  %.1f pods/s  %.2f writes/pod\n", t.Raw.Seconds, t.Raw.WorkflowsPerSec, t.Raw.PodsPerSec, t.Raw.WritesPerPod)
		fmt.Fprintf(w, "  ratio %.0f%%, direct task-result reads %.0f\n", 100*t.Ratio, t.DirectReads)
		fmt.Fprintf(w, "  hop latency under load (p50/p99): controller %.1f/%.1f ms, raw client %.1f/%.1f ms\n",
			t.Controller.HopLatency.P50Ms, t.Controller.HopLatency.P99Ms, t.Raw.HopLatency.P50Ms, t.Raw.HopLatency.P99Ms)
		fmt.Fprintf(w, "  controller API calls (per pod / per workflow):\n")
		for _, c := range t.Controller.Calls {
			fmt.Fprintf(w, "    %-40s %6d  %6.2f  %6.2f\n", c.Call, c.Total, c.PerPod, c.PerWorkflow)
		}
		fmt.Fprintln(w)
	}
	if o := r.Orphans; o != nil {
		fmt.Fprintf(w, "orphan sweep: %d pods — controller %.2f s, raw patch loop %.2f s, ratio %.2f×\n\n", o.Pods, o.ControllerSeconds, o.RawSeconds, o.Ratio)
	}
	if l := r.LateResults; l != nil {
		fmt.Fprintf(w, "late results (%.0f s task-result watch delay): %d workflows × %d pods in %.2f s (%.1f pods/s), %.2f direct reads/pod, %d Succeeded without outputs\n\n",
			l.DelaySeconds, l.Workflows, l.Pods/max(l.Workflows, 1), l.Run.Seconds, l.Run.PodsPerSec, l.DirectReadsPerPod, l.SucceededWithoutOutputs)
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "memory: %d workflows cached — heap in use %s (baseline %s), RSS %s (baseline %s), %.1f KiB/workflow\n\n", m.Workflows,
			mib(m.LoadedHeapInuseBytes), mib(m.BaselineHeapInuseBytes), mib(m.LoadedRSSBytes), mib(m.BaselineRSSBytes), m.HeapBytesPerWorkflow/1024)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "DESIGN.md target\ttarget\tmeasured\tverdict\n")
	for _, t := range r.Targets {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Target, t.Measured, t.Verdict)
	}
	tw.Flush()
}

func machine() Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		fmt.Sscanf(v, "%d", &m.MemoryKiB)
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file ("" if absent).
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
