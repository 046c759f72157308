package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func workflowsNamed(prefix string, n int) []*wfv1.Workflow {
	var out []*wfv1.Workflow
	for i := range n {
		out = append(out, &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: prefix + string(rune('0'+i))}})
	}
	return out
}

func TestBombsAreSpreadEvenlyAmongTheOrdinaryWorkflows(t *testing.T) {
	for _, tc := range []struct {
		sentence         string
		ordinary, beside int
		want             []string
	}{
		{"one bomb after every second of four workflows", 4, 2, []string{"o0", "o1", "b0", "o2", "o3", "b1"}},
		{"a hundred and twenty give one after every fifth (first ten shown)", 10, 2, []string{"o0", "o1", "o2", "o3", "o4", "b0", "o5", "o6", "o7", "o8", "o9", "b1"}},
		{"more bombs than workflows go two after each", 2, 4, []string{"o0", "b0", "b1", "o1", "b2", "b3"}},
		{"without bombs the workflows stay as they were", 3, 0, []string{"o0", "o1", "o2"}},
		{"without workflows the bombs are all there is", 0, 2, []string{"b0", "b1"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got := names(interleave(workflowsNamed("o", tc.ordinary), workflowsNamed("b", tc.beside)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("interleaved = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTheHostileRoundsAlternateWhichSideRunsFirst(t *testing.T) {
	for _, tc := range []struct {
		sentence   string
		rounds     int
		wantRounds int
		wantFirsts []hostileSide
	}{
		{"the default four put each side first twice, in turn", Defaults().HostileRounds, 4,
			[]hostileSide{sideBaseline, sideWithBombs, sideBaseline, sideWithBombs}},
		{"two put each first once", 2, 2, []hostileSide{sideBaseline, sideWithBombs}},
		{"none asked for still runs one round", 0, 1, []hostileSide{sideBaseline}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			o := Options{HostileRounds: tc.rounds}
			if got := o.hostileRounds(); got != tc.wantRounds {
				t.Fatalf("rounds = %d, want %d", got, tc.wantRounds)
			}
			var firsts []hostileSide
			for r := range o.hostileRounds() {
				order := roundOrder(hostileSides, r)
				if len(order) != 2 || order[0] == order[1] {
					t.Fatalf("round %d runs %v, want each side once", r+1, order)
				}
				firsts = append(firsts, order[0])
			}
			if !slices.Equal(firsts, tc.wantFirsts) {
				t.Errorf("first in each round: %v, want %v", firsts, tc.wantFirsts)
			}
		})
	}
}

// msHops is a sample of hop durations in milliseconds.
func msHops(ms ...int) []time.Duration {
	var out []time.Duration
	for _, m := range ms {
		out = append(out, time.Duration(m)*time.Millisecond)
	}
	return out
}

// hostileRun is a run with these hops, seconds to the last ordinary completion and bombs.
func hostileRun(round, position int, seconds float64, hops []time.Duration, bombs ...BombOutcome) HostileRun {
	return HostileRun{Round: round, Position: position, Seconds: seconds, HopLatency: summarize(hops), hops: hops, CPUSeconds: seconds / 2,
		OtherCPUSeconds: seconds / 4, Bombs: bombs}
}

const depthMessage = "error in entry template execution: Maximum recursion depth exceeded (100 nested templates) at node b(0).a(0): a template calls itself without end"

func atDepth(name string, seconds float64) BombOutcome {
	return BombOutcome{Name: name, Shape: "steps", Phase: wfv1.WorkflowError, Message: depthMessage, Nodes: 301, Seconds: seconds}
}

// sampleHostile is two rounds, the baseline first in the first: hops of 100-400 ms alone, and beside the
// bombs the same but for the slowest, 440 ms.
func sampleHostile(bombs ...BombOutcome) *HostileResult {
	shapes := map[string]string{}
	for _, b := range bombs {
		shapes[b.Name] = b.Shape
	}
	baseline := []HostileRun{hostileRun(1, 1, 10, msHops(100, 200)), hostileRun(2, 2, 14, msHops(300, 400))}
	withBombs := []HostileRun{hostileRun(1, 2, 12, msHops(100, 220), bombs...), hostileRun(2, 1, 13, msHops(300, 440), bombs...)}
	return newHostileResult(10, 50, shapes, baseline, withBombs)
}

func TestTheRunsWithBombsArePutAgainstTheRunsAloneOverEveryRoundAndRoundByRound(t *testing.T) {
	h := sampleHostile(atDepth("bomb-steps-000", 0.5), BombOutcome{Name: "bomb-dag-001", Shape: "dag", Phase: wfv1.WorkflowFailed, Nodes: 3, Seconds: 1.5})
	for _, c := range []struct {
		sentence  string
		got, want float64
	}{
		{"hop p50 is over every hop of every run alone", h.Baseline.HopLatency.P50Ms, 200},
		{"and beside the bombs", h.WithBombs.HopLatency.P50Ms, 220},
		{"hop p99 likewise", h.WithBombs.HopLatency.P99Ms, 440},
		{"the p50 ratio is with bombs ÷ alone", h.HopP50Ratio, 220.0 / 200},
		{"the p99 ratio too", h.HopP99Ratio, 440.0 / 400},
		{"the time to the last ordinary completion is the runs' mean", h.WithBombs.Seconds, 12.5},
		{"and its ratio is of the means", h.CompletionRatio, 12.5 / 12},
		{"the controller's CPU is the runs' mean", h.Baseline.CPUSeconds, 6},
		{"the rest of the machine's cores are the runs' mean", h.Baseline.OtherCores, 0.25},
		{"every bomb of every run is counted", float64(h.WithBombs.BombsRun), 4},
		{"only those Error at the depth count as ended there", float64(h.WithBombs.BombsAtDepth), 2},
		{"the bombs' time to end is over every run", h.WithBombs.BombsEnded.MaxMs, 1500},
		{"the most nodes a bomb had", float64(h.WithBombs.MaxBombNodes), 301},
		{"the baseline ran no bomb", float64(h.Baseline.BombsRun), 0},
		{"the first round's p99 ratio is its own runs'", h.Rounds[0].HopP99Ratio, 220.0 / 200},
		{"the second round's completion ratio too", h.Rounds[1].CompletionRatio, 13.0 / 14},
		{"bombs are counted by shape", float64(h.BombShapes["dag"]), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.sentence, c.got, c.want)
		}
	}
	if len(h.Rounds) != 2 || !h.Rounds[0].BaselineFirst || h.Rounds[1].BaselineFirst {
		t.Errorf("rounds = %+v, want two, the baseline first in the first only", h.Rounds)
	}
}

func TestTheOtherWorkIsWhatTheMachineUsedBeyondTheMeasuredProcesses(t *testing.T) {
	measured := map[string]float64{"kube-apiserver": 20, "etcd": 3, "bench process": 5}
	for _, tc := range []struct {
		sentence   string
		busy       float64
		controller float64
		want       float64
	}{
		{"a machine busy 40 s beside 28 s measured and a controller's 4 s had 8 s of other work", 40, 4, 8},
		{"a machine busy with nothing else had none", 32, 4, 0},
		{"the controller read after the last release never makes it negative", 31.5, 4, 0},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got := otherCPUSeconds(RunStats{MachineCPUSeconds: measured, MachineBusySeconds: tc.busy}, tc.controller)
			if got != tc.want {
				t.Errorf("other CPU = %v s, want %v", got, tc.want)
			}
		})
	}
}

func TestABombEndsAsItMustOnlyInErrorAtTheDepthAfterOnePathDown(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		bomb     BombOutcome
		want     bool
	}{
		{"Error with the depth's message in a few hundred nodes", atDepth("b", 1), true},
		{"Error for another reason", BombOutcome{Phase: wfv1.WorkflowError, Message: "pod deleted", Nodes: 3}, false},
		{"Failed at the depth", BombOutcome{Phase: wfv1.WorkflowFailed, Message: depthMessage, Nodes: 301}, false},
		{"Error at the depth after expanding a tree", BombOutcome{Phase: wfv1.WorkflowError, Message: depthMessage, Nodes: maxBombNodes + 1}, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := tc.bomb.EndedAtDepth(); got != tc.want {
				t.Errorf("ended at depth = %v, want %v", got, tc.want)
			}
		})
	}
}

// withHostile is a report of controllers with only the hostile scenario's result h, evaluated.
func withHostile(h *HostileResult, controllers ...string) *Report {
	r := &Report{Controllers: controllers, Hostile: h}
	r.evaluate()
	return r
}

func target(r *Report, name string) Target {
	for _, t := range r.Targets {
		if t.Name == name {
			return t
		}
	}
	return Target{}
}

func TestOrdinaryLatencyBesideBombsIsIntactWithinTheHopBoundAtP50AndP99(t *testing.T) {
	slowP99 := sampleHostile(atDepth("bomb-steps-000", 0.5))
	slowP99.HopP99Ratio = 1.21
	slowP50 := sampleHostile(atDepth("bomb-steps-000", 0.5))
	slowP50.HopP50Ratio = 1.3
	onTheBound := sampleHostile(atDepth("bomb-steps-000", 0.5))
	onTheBound.HopP50Ratio, onTheBound.HopP99Ratio = maxHopRatio, maxHopRatio
	noHops := sampleHostile(atDepth("bomb-steps-000", 0.5))
	noHops.Baseline.HopLatency = Latencies{}
	for _, tc := range []struct {
		sentence       string
		report         *Report
		latency, bombs string
		latencyFigure  string
	}{
		{"ratios of 1.10× and every bomb at the depth meet both", withHostile(sampleHostile(atDepth("bomb-steps-000", 0.5)), ControllerWFGuard, ControllerArgo),
			verdictMet, verdictMet, "p50 1.10×, p99 1.10× (220.0 / 440.0 ms vs 200.0 / 400.0 ms alone)"},
		{"a ratio on the bound is within it", withHostile(onTheBound, ControllerWFGuard), verdictMet, verdictMet, "p50 1.20×, p99 1.20×"},
		{"a p99 beyond 1.2× misses", withHostile(slowP99, ControllerWFGuard), verdictNotMet, verdictMet, "p99 1.21×"},
		{"a p50 beyond it misses too", withHostile(slowP50, ControllerWFGuard), verdictNotMet, verdictMet, "p50 1.30×"},
		{"one bomb that did not end at the depth misses the bombs' target alone",
			withHostile(sampleHostile(atDepth("bomb-steps-000", 0.5), BombOutcome{Name: "bomb-dag-001", Phase: wfv1.WorkflowRunning}), ControllerWFGuard),
			verdictMet, verdictNotMet, "p50 1.10×"},
		{"a run without bombs judges no bomb", withHostile(sampleHostile(), ControllerWFGuard), verdictMet, verdictNotRun, "p50 1.10×"},
		{"a side without hops has nothing to judge", withHostile(noHops, ControllerWFGuard), verdictNotRun, verdictNotRun, "-"},
		{"without the scenario neither is judged", withHostile(nil, ControllerWFGuard), verdictNotRun, verdictNotRun, "-"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			latency, bombs := target(tc.report, targetHostileLatency), target(tc.report, targetHostileBombs)
			if latency.Verdict != tc.latency || bombs.Verdict != tc.bombs {
				t.Errorf("verdicts: latency %q, bombs %q; want %q, %q (%+v, %+v)", latency.Verdict, bombs.Verdict, tc.latency, tc.bombs, latency, bombs)
			}
			if !strings.Contains(latency.Measured, tc.latencyFigure) {
				t.Errorf("latency figure %q lacks %q", latency.Measured, tc.latencyFigure)
			}
			if latency.ArgoVerdict != verdictNotRun || bombs.ArgoVerdict != verdictNotRun {
				t.Errorf("argo judged on a scenario it does not run: %+v, %+v", latency, bombs)
			}
			if latency.ArgoMeasured != argoNotHostile || bombs.ArgoMeasured != argoNotHostile {
				t.Errorf("argo's cells do not say why it is not run: %q, %q", latency.ArgoMeasured, bombs.ArgoMeasured)
			}
			if tc.report.Met() != (latency.Verdict != verdictNotMet && bombs.Verdict != verdictNotMet) {
				t.Errorf("the report's Met() = %v with verdicts %q and %q", tc.report.Met(), latency.Verdict, bombs.Verdict)
			}
		})
	}
}

func TestTheHostileScenarioPrintsEveryRunInTheOrderItRanAndTheRatios(t *testing.T) {
	dag := atDepth("bomb-dag-001", 0.25)
	dag.Shape = "dag"
	r := withHostile(sampleHostile(atDepth("bomb-steps-000", 0.5), dag), ControllerWFGuard)
	var text bytes.Buffer
	r.WriteText(&text)
	got := text.String()
	for _, want := range []string{
		"hostile (wfguard): 10 chains × 5 pods, alone and beside 2 recursion bombs (1 dag, 1 steps), 2 rounds",
		"round 1 baseline", "round 1 with bombs", "round 2 with bombs", "round 2 baseline",
		"with bombs ÷ alone: hop p50 1.10×, p99 1.10×, last ordinary done 1.04× (by round, p50/p99/done: 1.00/1.10/1.20, 1.00/1.10/0.93)",
		targetHostileLatency, targetHostileBombs,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the text report lacks %q:\n%s", want, got)
		}
	}
	order := []string{"round 1 baseline", "round 1 with bombs", "round 2 with bombs", "round 2 baseline"}
	for i := 1; i < len(order); i++ {
		if strings.Index(got, order[i-1]) > strings.Index(got, order[i]) {
			t.Errorf("%q printed after %q:\n%s", order[i-1], order[i], got)
		}
	}
	if js := roundTrip(t, r); js.Hostile == nil || len(js.Hostile.WithBombs.Runs[0].Bombs) != 2 || js.Hostile.WithBombs.Runs[0].Bombs[0].Message != depthMessage {
		t.Errorf("the JSON report lacks the bombs' outcomes: %+v", js.Hostile)
	}
}
