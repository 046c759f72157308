package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A tiny run keeps `make bench` honest: every scenario runs end to end for both controllers, each as its own
// process, and the counts add up. No figure is asserted against a threshold here; that is the report's job.
// Stock argo reconciles a workflow at most every 10 s (its DEFAULT_REQUEUE_TIME), so the sizes are minimal.
func TestASmallRunReportsEveryScenarioForBothControllersWithCountsThatAddUp(t *testing.T) {
	root, err := controlplane.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "wfguard")
	build := exec.Command("go", "build", "-o", binary, "./cmd/wfguard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wfguard: %v\n%s", err, out)
	}
	o := Options{Controllers: Controllers, Workers: 4, QPS: 500, Burst: 1000, CoalesceWindow: time.Second, LatencyChains: 1, ChainLength: 3,
		LatencyFanOuts: 1, FanOutWidth: 2, ThroughputWorkflows: 3, ThroughputNodes: 2, ThroughputRounds: 2,
		HostileWorkflows: 3, HostileBombs: 2, HostileRounds: 2, Actions: 3, OrphanPods: 30, OrphanRounds: 2, LateResultWorkflows: 2,
		LateResultDelay: 3 * time.Second, ScaleWorkflows: 2, ScalePodsPerWorkflow: 4, MemoryWorkflows: 40, MemoryPodsPerWorkflow: 2,
		ControllerBinary: binary, Progress: testWriter{t}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	if r.Throughput == nil || r.Orphans == nil || r.Hostile == nil {
		t.Fatalf("a scenario is missing from the report: %+v", r)
	}
	for _, c := range Controllers {
		if r.Latency[c] == nil || r.Throughput.Controllers[c] == nil || r.Actions[c] == nil || r.LateResults[c] == nil || r.Memory[c] == nil ||
			r.Scale[c] == nil {
			t.Fatalf("a scenario of %s is missing from the report: %+v", c, r)
		}
	}
	t.Run("the orphan sweep runs each round's controller and raw loop, alternating which goes first", func(t *testing.T) {
		o := r.Orphans
		if len(o.Rounds) != 2 || !o.Rounds[0].ControllerFirst || o.Rounds[1].ControllerFirst {
			t.Fatalf("orphan rounds %+v, want two, the controller first in the first only", o.Rounds)
		}
		for i, round := range o.Rounds {
			if round.ControllerSeconds <= 0 || round.RawSeconds <= 0 || round.Ratio != round.ControllerSeconds/round.RawSeconds {
				t.Errorf("orphan round %d not measured: %+v", i+1, round)
			}
		}
		if o.Ratio != medianOrphansRound(o.Rounds).Ratio {
			t.Errorf("orphan ratio %.3f is not the median round's (%+v)", o.Ratio, o.Rounds)
		}
	})
	t.Run("every successor pod has a latency sample, under either controller", func(t *testing.T) {
		for _, c := range Controllers {
			l := r.Latency[c]
			if l.All.Count != 4 || l.Chain.Count != 2 || l.FanOut.Count != 2 {
				t.Errorf("%s latency samples: all %d chain %d fan-out %d, want 4/2/2", c, l.All.Count, l.Chain.Count, l.FanOut.Count)
			}
		}
	})
	// The throughput scenario's figures cover both rounds of 3 workflows × 2 pods.
	const throughputPods, throughputWorkflows = 2 * 6, 2 * 3
	t.Run("the throughput scenario ran every subject once per round, in rotated order", func(t *testing.T) {
		subjects := map[string]RunStats{"raw minimum": r.Throughput.Raw, "raw pipeline": r.Throughput.RawPipeline}
		for _, c := range Controllers {
			subjects[c] = r.Throughput.Controllers[c].RunStats
		}
		// Each 2-pod chain has one hop: 3 per round.
		const hops = 2 * 3
		for name, s := range subjects {
			if len(s.Rounds) != 2 || s.Rounds[0].Position == s.Rounds[1].Position {
				t.Errorf("%s rounds = %+v, want 2 at different places in their rounds", name, s.Rounds)
			}
			if s.HopLatency.Count != hops {
				t.Errorf("%s hop latency over %d hops, want every round's %d", name, s.HopLatency.Count, hops)
			}
		}
	})
	t.Run("the hostile scenario runs wfguard's chains alone and beside bombs that all end at the depth, alternating which goes first", func(t *testing.T) {
		h := r.Hostile
		if len(h.Rounds) != 2 || !h.Rounds[0].BaselineFirst || h.Rounds[1].BaselineFirst {
			t.Fatalf("hostile rounds %+v, want two, the baseline first in the first only", h.Rounds)
		}
		for _, side := range hostileSides {
			s := h.side(side)
			// Each 2-pod chain has one hop: 3 per run.
			if len(s.Runs) != 2 || s.HopLatency.Count != 2*3 || s.Seconds <= 0 || s.CPUSeconds <= 0 {
				t.Errorf("%s: %d runs, %d hops, %v s, %v CPU s; want 2 runs of 3 hops, measured", side, len(s.Runs), s.HopLatency.Count, s.Seconds, s.CPUSeconds)
			}
			for _, run := range s.Runs {
				if run.Phases[wfv1.WorkflowSucceeded] != 3 || len(run.Phases) != 1 {
					t.Errorf("%s round %d: ordinary phases %v, want 3 Succeeded", side, run.Round, run.Phases)
				}
			}
		}
		if w := h.WithBombs; w.BombsRun != 2*2 || w.BombsAtDepth != w.BombsRun || h.Baseline.BombsRun != 0 {
			t.Errorf("bombs: %d of %d at the depth beside, %d at baseline; want all 4 beside, none at baseline: %+v", w.BombsAtDepth, w.BombsRun,
				h.Baseline.BombsRun, w.Runs)
		}
		if h.HopP50Ratio <= 0 || h.HopP99Ratio <= 0 || h.CompletionRatio <= 0 {
			t.Errorf("ratios not measured: %+v", h)
		}
	})
	t.Run("wfguard creates each pod once and releases it once, with no cache bypass", func(t *testing.T) {
		w := r.Throughput.Controllers[ControllerWFGuard]
		for counter, want := range map[string]float64{"wfguard_pods_created_total": throughputPods, "wfguard_pod_finalizers_released_total{reason=persisted}": throughputPods} {
			if got := w.Counters[counter]; got != want {
				t.Errorf("wfguard %s = %v, want %v", counter, got, want)
			}
		}
		if w.DirectReads == nil || *w.DirectReads != 0 {
			t.Errorf("direct task-result reads without faults = %v, want 0", w.DirectReads)
		}
	})
	t.Run("the proxy counts at least one pod create and one finalizer patch per pod for either controller", func(t *testing.T) {
		// More if the API server throttled and client-go retried.
		for _, c := range Controllers {
			for _, call := range []string{"create pods", "patch pods"} {
				if got := total(r.Throughput.Controllers[c].Calls, call); got < throughputPods {
					t.Errorf("%s: %s on the wire = %d, want at least %d", c, call, got, throughputPods)
				}
			}
			if cpu := r.Throughput.Controllers[c].CPUSeconds; cpu <= 0 {
				t.Errorf("%s used %v CPU seconds over the throughput run", c, cpu)
			}
		}
	})
	t.Run("the raw client does exactly the minimum writes", func(t *testing.T) {
		// per workflow: create + final update; per pod: create, workflow update, finalizer patch
		if got, want := r.Throughput.Raw.WritesPerPod, float64(3*2+6*3)/6; got != want {
			t.Errorf("raw writes per pod = %v, want %v (calls %+v)", got, want, r.Throughput.Raw.Calls)
		}
	})
	t.Run("the pipeline-writes raw client makes wfguard's user-visible writes: nodes Pending, Running and final, and its Events", func(t *testing.T) {
		// 3 workflows × 2 pods. Per workflow: create, a first update (Running, the DAG node, the first node
		// Pending), per node a final update (with the successor Pending) and at most one Running update;
		// Events WorkflowRunning, WorkflowNodeSucceeded per node and for the DAG, WorkflowSucceeded, and
		// PodFinalizersReleased per pod, whose repeats the correlator makes patches.
		calls := r.Throughput.RawPipeline.Calls
		for call, want := range map[string]int{"create pods": throughputPods, "patch pods": throughputPods, "create workflows": throughputWorkflows,
			"create events": throughputWorkflows * (2 + 4), "patch events": throughputWorkflows * (2 - 1)} {
			if got := total(calls, call); got != want {
				t.Errorf("raw pipeline %s = %d, want %d (calls %+v)", call, got, want, calls)
			}
		}
		if got := total(calls, "update workflows"); got < throughputWorkflows*3 || got > throughputWorkflows*5 {
			t.Errorf("raw pipeline workflow updates = %d, want %d (no node seen running) to %d (every node)", got, throughputWorkflows*3, throughputWorkflows*5)
		}
		w := r.Throughput.Controllers[ControllerWFGuard].Calls
		if got, raw := total(w, "create events")+total(w, "patch events"), total(calls, "create events")+total(calls, "patch events"); got < raw {
			t.Errorf("wfguard wrote %d Events, fewer than the %d the raw pipeline copies from it: its queued Events were not all counted", got, raw)
		}
	})
	t.Run("both request kinds finish and show in every workflow, under either controller", func(t *testing.T) {
		for _, c := range Controllers {
			a := r.Actions[c]
			if a.Suspend.Count != 3 || a.Resume.Count != 3 || a.SuspendVisible.Count != 3 || a.ResumeVisible.Count != 3 || a.Failed != 0 {
				t.Errorf("%s actions: %+v", c, a)
			}
		}
		if a := r.RawActions; a == nil || a.Suspend.Count != 3 || a.Resume.Count != 3 || a.SuspendVisible.Count != 3 || a.Failed != 0 {
			t.Errorf("the raw client's floor: %+v", a)
		}
	})
	t.Run("late results lose no output under wfguard, which reads past the delayed cache", func(t *testing.T) {
		l := r.LateResults[ControllerWFGuard]
		if l.SucceededWithoutOutputs != 0 {
			t.Errorf("%d nodes succeeded without outputs", l.SucceededWithoutOutputs)
		}
		if l.DirectReadsPerPod == nil || *l.DirectReadsPerPod <= 0 {
			t.Errorf("no direct reads under a %s result delay", o.LateResultDelay)
		}
		if got := r.LateResults[ControllerArgo].Run.Phases; len(got) == 0 {
			t.Errorf("argo's late-results run has no final phases")
		}
	})
	t.Run("the memory scenario measures each controller's process, beside the workflows' finished pods", func(t *testing.T) {
		for _, c := range Controllers {
			m := r.Memory[c]
			if m.LoadedHeapInuseBytes <= 0 || m.LoadedRSSBytes <= 0 || m.BaselineHeapInuseBytes <= 0 || m.BaselineRSSBytes <= 0 {
				t.Errorf("%s memory: %+v", c, m)
			}
			if m.Workflows != 40 || m.Pods != 80 || m.CreateSeconds <= 0 {
				t.Errorf("%s memory: %d workflows, %d pods created in %v s, want 40 and 80", c, m.Workflows, m.Pods, m.CreateSeconds)
			}
		}
		if got := r.Memory[ControllerWFGuard].PodsCached; got == nil || *got != 0 {
			t.Errorf("wfguard caches %v pods with only finished pods in its namespace, want 0", deref(got))
		}
		if got := r.Memory[ControllerArgo].PodsCached; got != nil {
			t.Errorf("argo exports no count of its cached pods, yet the report has %v", *got)
		}
	})
	t.Run("the scale scenario runs every workflow to success and measures each controller's process", func(t *testing.T) {
		for _, c := range Controllers {
			s := r.Scale[c]
			if s.Pods != 8 || s.Phases["Succeeded"] != 2 || len(s.Phases) != 1 {
				t.Errorf("%s scale: %d pods, phases %v, want 8 pods and 2 Succeeded", c, s.Pods, s.Phases)
			}
			if s.Seconds <= 0 || s.PodsPerSec <= 0 || s.ReleasedSeconds < s.Seconds || s.CPUSeconds <= 0 || s.CPUSecondsPerWorkflow <= 0 {
				t.Errorf("%s scale: time or CPU not measured: %+v", c, s)
			}
			if s.BaselineHeapInuseBytes <= 0 || s.PeakHeapInuseBytes <= 0 || s.EndHeapInuseBytes <= 0 ||
				s.BaselineRSSBytes <= 0 || s.EndRSSBytes <= 0 || s.PeakRSSBytes < s.EndRSSBytes {
				t.Errorf("%s scale: memory not measured: %+v", c, s)
			}
		}
		// Every pod was released, which labels it completed: none is left in wfguard's cache. (Its peak is
		// sampled once a second, too seldom to assert it caught a run this short.)
		w := r.Scale[ControllerWFGuard]
		if w.PeakPodsCached == nil || w.EndPodsCached == nil || *w.EndPodsCached != 0 {
			t.Errorf("wfguard pods cached: peak %v, end %v, want an end of 0", deref(w.PeakPodsCached), deref(w.EndPodsCached))
		}
		if a := r.Scale[ControllerArgo]; a.PeakPodsCached != nil || a.EndPodsCached != nil {
			t.Errorf("argo exports no count of its cached pods, yet the report has one: %+v", a)
		}
		var text, js bytes.Buffer
		r.WriteText(&text)
		if err := r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "scale: 2 workflows × 4 pods") || !strings.Contains(text.String(), "scale 2 × 4: time to finish") {
			t.Errorf("the text report lacks the scale scenario:\n%s", text.String())
		}
		if !strings.Contains(js.String(), `"peakHeapInuseBytes"`) {
			t.Errorf("the JSON report lacks the scale scenario:\n%s", js.String())
		}
	})
	t.Run("every target gets a verdict from this run for wfguard, and the report prints them", func(t *testing.T) {
		if len(r.Targets) != 10 {
			t.Errorf("targets: %d, want 10", len(r.Targets))
		}
		var text bytes.Buffer
		r.WriteText(&text)
		for _, tg := range r.Targets {
			if tg.Verdict == verdictNotRun {
				t.Errorf("target %q not run", tg.Name)
			}
			if !strings.Contains(text.String(), tg.Name) {
				t.Errorf("text report lacks %q", tg.Name)
			}
		}
		var js bytes.Buffer
		if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"targets"`) || !strings.Contains(js.String(), `"comparison"`) {
			t.Errorf("JSON report: %v\n%s", err, js.String())
		}
	})
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}

func total(calls []APICall, call string) int {
	for _, c := range calls {
		if c.Call == call {
			return c.Total
		}
	}
	return 0
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
