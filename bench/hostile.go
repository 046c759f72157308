package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
)

// HostileResult is the throughput scenario's chains run by wfguard alone (the baseline) and beside
// recursion bombs submitted with them (issue #44 item 2), over rounds that alternate which runs first.
// Stock argo is not run: it expands a bomb for ever.
type HostileResult struct {
	Workflows int `json:"workflows"` // ordinary chains per run
	Pods      int `json:"pods"`      // their pods per run
	Bombs     int `json:"bombs"`     // recursion bombs beside them in each run with bombs
	// BombShapes count the bombs of each run by shape (workload.RecursionBombs).
	BombShapes map[string]int `json:"bombShapes"`
	Baseline   HostileSide    `json:"baseline"`
	WithBombs  HostileSide    `json:"withBombs"`
	// HopP50Ratio, HopP99Ratio and CompletionRatio are with bombs ÷ baseline over every round: hop latency
	// over every hop, completion (submit → last ordinary workflow completed) the runs' mean.
	HopP50Ratio     float64        `json:"hopP50Ratio"`
	HopP99Ratio     float64        `json:"hopP99Ratio"`
	CompletionRatio float64        `json:"completionRatio"`
	Rounds          []HostileRound `json:"rounds"`
}

// HostileRound is one round's two runs put against each other.
type HostileRound struct {
	BaselineFirst   bool    `json:"baselineFirst"`
	HopP50Ratio     float64 `json:"hopP50Ratio"`
	HopP99Ratio     float64 `json:"hopP99Ratio"`
	CompletionRatio float64 `json:"completionRatio"`
}

// HostileSide is one side's runs, one per round, and their figures together.
type HostileSide struct {
	Runs []HostileRun `json:"runs"`
	// HopLatency is over every hop of every run.
	HopLatency Latencies `json:"hopLatency"`
	// Seconds is the runs' mean time from the submit to the last ordinary workflow seen completed.
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the controller process's mean CPU time per run (submit → last release).
	CPUSeconds float64 `json:"cpuSeconds"`
	// OtherCores is the cores the rest of the machine kept busy, the runs' mean (OtherCPUSeconds ÷ Seconds).
	OtherCores float64 `json:"otherCores"`
	// BombsEnded is every bomb's time from the submit to seen completed, over every run.
	BombsEnded Latencies `json:"bombsEnded"`
	// BombsAtDepth counts the bombs that ended as they must (BombOutcome.EndedAtDepth), of BombsRun.
	BombsAtDepth int `json:"bombsAtDepth"`
	BombsRun     int `json:"bombsRun"`
	// MaxBombNodes is the most nodes a bomb ended with.
	MaxBombNodes int `json:"maxBombNodes"`
}

// HostileRun is one run of the ordinary chains, alone or beside the bombs, on a controller of its own.
type HostileRun struct {
	Round    int `json:"round"`
	Position int `json:"position"` // 1: ran first in its round
	// Seconds is submit → the last ordinary workflow seen completed.
	Seconds    float64   `json:"seconds"`
	HopLatency Latencies `json:"hopLatency"`
	// CPUSeconds is the controller process's, submit → last release; MachineCPUSeconds the control plane's
	// and the bench process's over the same span, by process.
	CPUSeconds        float64            `json:"cpuSeconds"`
	MachineCPUSeconds map[string]float64 `json:"machineCpuSeconds,omitempty"`
	// OtherCPUSeconds is the CPU time the rest of the machine used over the run: every process's less the
	// measured ones' (the other sessions' tests that shared the cores).
	OtherCPUSeconds float64                    `json:"otherCpuSeconds"`
	Phases          map[wfv1.WorkflowPhase]int `json:"phases"` // the ordinary workflows'
	Bombs           []BombOutcome              `json:"bombs,omitempty"`

	hops []time.Duration
}

// BombOutcome is how a recursion bomb ended.
type BombOutcome struct {
	Name    string             `json:"name"`
	Shape   string             `json:"shape"`
	Phase   wfv1.WorkflowPhase `json:"phase"`
	Message string             `json:"message"`
	Nodes   int                `json:"nodes"`
	// Seconds is submit → seen completed.
	Seconds float64 `json:"seconds"`
}

// maxBombNodes is the most nodes a bomb may end with: one path down to the depth and back (nodes, step
// groups and attempts per level), not a tree. The chaos suite holds bombs to the same bound.
const maxBombNodes = 5 * engine.MaxTemplateDepth

// EndedAtDepth reports whether the bomb ended as issue #44 item 2 requires: Error at the recursion depth,
// after one path down.
func (b BombOutcome) EndedAtDepth() bool {
	return b.Phase == wfv1.WorkflowError && strings.Contains(b.Message, workload.RecursionEnded) && b.Nodes <= maxBombNodes
}

// hostileSide is one of the scenario's two runs per round.
type hostileSide string

const (
	sideBaseline  hostileSide = "baseline"
	sideWithBombs hostileSide = "with bombs"
)

// hostileSides are the two sides, in the first round's order; roundOrder alternates them.
var hostileSides = []hostileSide{sideBaseline, sideWithBombs}

func (s hostileSide) namespacePrefix() string {
	if s == sideWithBombs {
		return "bench-hostile-bombs"
	}
	return "bench-hostile-baseline"
}

// hostileRounds is how many rounds the hostile scenario runs (at least one).
func (o Options) hostileRounds() int { return max(o.HostileRounds, 1) }

// hostile runs the ordinary chains alone and beside the bombs, each on a fresh namespace, controller and
// node, round after round in alternating order: a run's place in the bench (the API server's watch cache
// grows, the machine's other work comes and goes) weighs on both sides alike.
func (e *env) hostile(ctx context.Context, report *Report) error {
	if !e.runs(ControllerWFGuard) {
		return nil
	}
	n, m := e.opts.HostileWorkflows, e.opts.ThroughputNodes
	bombs, shapes := recursionBombs(e.opts.HostileBombs)
	if err := e.warmControlPlane(ctx, n, m); err != nil {
		return err
	}
	runs := map[hostileSide][]HostileRun{}
	rounds := e.opts.hostileRounds()
	for r := range rounds {
		for i, side := range roundOrder(hostileSides, r) {
			e.opts.progressf("bench:   round %d of %d, %d of %d: %s", r+1, rounds, i+1, len(hostileSides), side)
			var beside []*wfv1.Workflow
			if side == sideWithBombs {
				beside = bombs
			}
			run, err := e.hostileRun(ctx, side, n, m, beside, shapes)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, side, err)
			}
			run.Round, run.Position = r+1, i+1
			runs[side] = append(runs[side], run)
		}
	}
	report.Hostile = newHostileResult(n, n*m, shapes, runs[sideBaseline], runs[sideWithBombs])
	return nil
}

// recursionBombs are k bombs of workload.RecursionBombs' shapes in turn, and each one's shape by name.
func recursionBombs(k int) ([]*wfv1.Workflow, map[string]string) {
	var wfs []*wfv1.Workflow
	shapes := map[string]string{}
	for i := range k {
		b := workload.RecursionBombs[i%len(workload.RecursionBombs)]
		wf := b.Workflow(fmt.Sprintf("bomb-%s-%03d", b.Shape, i))
		wfs = append(wfs, wf)
		shapes[wf.Name] = b.Shape
	}
	return wfs, shapes
}

// hostileRun runs n chains of m pods under wfguard with the bombs beside them (none at baseline).
func (e *env) hostileRun(ctx context.Context, side hostileSide, n, m int, bombs []*wfv1.Workflow, shapes map[string]string) (HostileRun, error) {
	done, err := e.controllerRun(ctx, ControllerWFGuard, chainRun{prefix: side.namespacePrefix(), n: n, m: m, beside: bombs, profile: true})
	if err != nil {
		return HostileRun{}, err
	}
	r := done.run
	run := HostileRun{Seconds: r.Seconds, HopLatency: r.HopLatency, hops: r.hops, CPUSeconds: r.CPUSeconds,
		MachineCPUSeconds: r.MachineCPUSeconds, OtherCPUSeconds: otherCPUSeconds(r.RunStats, r.CPUSeconds), Phases: r.Phases}
	if len(bombs) == 0 {
		return run, nil
	}
	run.Bombs, err = e.bombOutcomes(ctx, done.namespace, shapes, done.besideEnded)
	return run, err
}

// otherCPUSeconds is what the machine used over a run beyond the measured processes and the controller (0
// when it used less: the controller's CPU is read a little later, after the last release).
func otherCPUSeconds(s RunStats, controller float64) float64 {
	measured, _ := totalCPU(s, controller)
	return max(s.MachineBusySeconds-measured, 0)
}

// bombOutcomes reads how each bomb of a run ended from the API server; ended is when the observer saw each
// complete, after the submit.
func (e *env) bombOutcomes(ctx context.Context, ns string, shapes map[string]string, ended map[string]time.Duration) ([]BombOutcome, error) {
	list, err := e.argo.ArgoprojV1alpha1().Workflows(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the bombs in %s: %w", ns, err)
	}
	byName := map[string]*wfv1.Workflow{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var out []BombOutcome
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		wf := byName[name]
		if wf == nil {
			return nil, fmt.Errorf("bomb %s is not in %s", name, ns)
		}
		if err := extstatus.InflateNodes(wf); err != nil {
			return nil, fmt.Errorf("reading the nodes of bomb %s: %w", name, err)
		}
		out = append(out, BombOutcome{Name: name, Shape: shapes[name], Phase: wf.Status.Phase, Message: wf.Status.Message,
			Nodes: len(wf.Status.Nodes), Seconds: ended[name].Seconds()})
	}
	return out, nil
}

// newHostileResult puts the two sides' runs together, round by round.
func newHostileResult(workflows, pods int, shapes map[string]string, baseline, withBombs []HostileRun) *HostileResult {
	res := &HostileResult{Workflows: workflows, Pods: pods, Bombs: len(shapes), BombShapes: map[string]int{},
		Baseline: newHostileSide(baseline), WithBombs: newHostileSide(withBombs)}
	for _, shape := range shapes {
		res.BombShapes[shape]++
	}
	res.HopP50Ratio = ratioOf(res.WithBombs.HopLatency.P50Ms, res.Baseline.HopLatency.P50Ms)
	res.HopP99Ratio = ratioOf(res.WithBombs.HopLatency.P99Ms, res.Baseline.HopLatency.P99Ms)
	res.CompletionRatio = ratioOf(res.WithBombs.Seconds, res.Baseline.Seconds)
	for i := range min(len(baseline), len(withBombs)) {
		b, w := baseline[i], withBombs[i]
		res.Rounds = append(res.Rounds, HostileRound{BaselineFirst: b.Position < w.Position,
			HopP50Ratio: ratioOf(w.HopLatency.P50Ms, b.HopLatency.P50Ms), HopP99Ratio: ratioOf(w.HopLatency.P99Ms, b.HopLatency.P99Ms),
			CompletionRatio: ratioOf(w.Seconds, b.Seconds)})
	}
	return res
}

// newHostileSide is a side's figures over its runs: hop latency over every hop, means per run, bombs over
// every run.
func newHostileSide(runs []HostileRun) HostileSide {
	s := HostileSide{Runs: runs}
	var hops []time.Duration
	var bombsEnded []time.Duration
	for _, r := range runs {
		hops = append(hops, r.hops...)
		s.Seconds += r.Seconds / float64(len(runs))
		s.CPUSeconds += r.CPUSeconds / float64(len(runs))
		s.OtherCores += ratioOf(r.OtherCPUSeconds, r.Seconds) / float64(len(runs))
		for _, b := range r.Bombs {
			s.BombsRun++
			if b.EndedAtDepth() {
				s.BombsAtDepth++
			}
			s.MaxBombNodes = max(s.MaxBombNodes, b.Nodes)
			bombsEnded = append(bombsEnded, time.Duration(b.Seconds*float64(time.Second)))
		}
	}
	s.HopLatency = summarize(hops)
	s.BombsEnded = summarize(bombsEnded)
	return s
}

// intact reports whether the ordinary workflows' hop latency beside the bombs stayed within maxHopRatio of
// their latency alone, at p50 and at p99: the bound issue #20 set for hop latency against the raw client.
func (h *HostileResult) intact() bool {
	within := func(r float64) bool { return r > 0 && r <= maxHopRatio }
	return within(h.HopP50Ratio) && within(h.HopP99Ratio)
}

// measured reports whether both sides measured hops, so that there are ratios to judge.
func (h *HostileResult) measured() bool {
	return h != nil && h.Baseline.HopLatency.Count > 0 && h.WithBombs.HopLatency.Count > 0
}

// latencyFigure is the latency target's measured figure.
func (h *HostileResult) latencyFigure() string {
	b, w := h.Baseline, h.WithBombs
	return fmt.Sprintf("p50 %.2f×, p99 %.2f× (%.1f / %.1f ms vs %.1f / %.1f ms alone); last ordinary done %.2f× (%.1f vs %.1f s); controller CPU %.1f vs %.1f s per run",
		h.HopP50Ratio, h.HopP99Ratio, w.HopLatency.P50Ms, w.HopLatency.P99Ms, b.HopLatency.P50Ms, b.HopLatency.P99Ms,
		h.CompletionRatio, w.Seconds, b.Seconds, w.CPUSeconds, b.CPUSeconds)
}

// bombsFigure is the bombs target's measured figure.
func (h *HostileResult) bombsFigure() string {
	w := h.WithBombs
	return fmt.Sprintf("%d of %d Error at the depth, at most %d nodes; ended p50 %.2f s, max %.2f s after the submit",
		w.BombsAtDepth, w.BombsRun, w.MaxBombNodes, w.BombsEnded.P50Ms/1000, w.BombsEnded.MaxMs/1000)
}

// writeText prints every run and the ratios, round by round.
func (h *HostileResult) writeText(w io.Writer) {
	var shapes []string
	for _, shape := range slices.Sorted(maps.Keys(h.BombShapes)) {
		shapes = append(shapes, fmt.Sprintf("%d %s", h.BombShapes[shape], shape))
	}
	fmt.Fprintf(w, "hostile (wfguard): %d chains × %d pods, alone and beside %d recursion bombs (%s), %d rounds\n",
		h.Workflows, h.Pods/max(h.Workflows, 1), h.Bombs, strings.Join(shapes, ", "), len(h.Rounds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  run\tplace\thop p50 / p99 ms\tlast ordinary done s\tcontroller CPU s\tother work, cores\tbombs at depth\tbombs ended p50 / max s\n")
	type row struct {
		side hostileSide
		run  HostileRun
	}
	var rows []row
	for _, side := range hostileSides {
		for _, run := range h.side(side).Runs {
			rows = append(rows, row{side, run})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.run.Round, b.run.Round), cmp.Compare(a.run.Position, b.run.Position))
	})
	for _, r := range rows {
		fmt.Fprintf(tw, "  round %d %s\t#%d\t%.0f / %.0f\t%.1f\t%.1f\t%.2f\t%s\n", r.run.Round, r.side, r.run.Position, r.run.HopLatency.P50Ms,
			r.run.HopLatency.P99Ms, r.run.Seconds, r.run.CPUSeconds, ratioOf(r.run.OtherCPUSeconds, r.run.Seconds), bombCells(newHostileSide([]HostileRun{r.run})))
	}
	for _, side := range hostileSides {
		s := h.side(side)
		fmt.Fprintf(tw, "  all %s (mean per run)\t\t%.0f / %.0f\t%.1f\t%.1f\t%.2f\t%s\n", side, s.HopLatency.P50Ms, s.HopLatency.P99Ms, s.Seconds, s.CPUSeconds,
			s.OtherCores, bombCells(s))
	}
	tw.Flush()
	var byRound []string
	for _, r := range h.Rounds {
		byRound = append(byRound, fmt.Sprintf("%.2f/%.2f/%.2f", r.HopP50Ratio, r.HopP99Ratio, r.CompletionRatio))
	}
	fmt.Fprintf(w, "  with bombs ÷ alone: hop p50 %.2f×, p99 %.2f×, last ordinary done %.2f× (by round, p50/p99/done: %s)\n\n",
		h.HopP50Ratio, h.HopP99Ratio, h.CompletionRatio, strings.Join(byRound, ", "))
}

func (h *HostileResult) side(s hostileSide) HostileSide {
	if s == sideWithBombs {
		return h.WithBombs
	}
	return h.Baseline
}

// bombCells is a side's bombs as two table cells: how many ended at the depth, and their times to end.
func bombCells(s HostileSide) string {
	if s.BombsRun == 0 {
		return "-\t-"
	}
	return fmt.Sprintf("%d of %d\t%.2f / %.2f", s.BombsAtDepth, s.BombsRun, s.BombsEnded.P50Ms/1000, s.BombsEnded.MaxMs/1000)
}
