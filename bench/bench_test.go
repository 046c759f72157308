package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A tiny run keeps `make bench` honest: every scenario runs end to end and its counts add up. No figure
// is asserted against a threshold here; that is the report's job.
func TestASmallRunReportsEveryScenarioWithCountsThatAddUp(t *testing.T) {
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
	o := Options{Workers: 4, LatencyChains: 2, ChainLength: 3, LatencyFanOuts: 1, FanOutWidth: 3,
		ThroughputWorkflows: 3, ThroughputNodes: 2, Actions: 3, OrphanPods: 30, LateResultWorkflows: 2,
		LateResultDelay: 3 * time.Second, MemoryWorkflows: 40, ControllerBinary: binary, Progress: testWriter{t}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	if r.Latency == nil || r.Throughput == nil || r.Actions == nil || r.Orphans == nil || r.LateResults == nil || r.Memory == nil {
		t.Fatalf("a scenario is missing from the report: %+v", r)
	}
	t.Run("every successor pod has a latency sample", func(t *testing.T) {
		if want := 2*(3-1) + 3; r.Latency.All.Count != want || r.Latency.Chain.Count != 4 || r.Latency.FanOut.Count != 3 {
			t.Errorf("latency samples: all %d chain %d fan-out %d, want %d/4/3", r.Latency.All.Count, r.Latency.Chain.Count, r.Latency.FanOut.Count, want)
		}
	})
	t.Run("the controller creates each pod once and releases it once, with no cache bypass", func(t *testing.T) {
		for counter, want := range map[string]float64{"wfguard_pods_created_total": 6, "wfguard_pod_finalizers_released_total{reason=persisted}": 6} {
			if got := r.Throughput.Controller.Counters[counter]; got != want {
				t.Errorf("controller %s = %v, want %v", counter, got, want)
			}
		}
		// On the wire there is at least one request per pod (more if the API server throttled and client-go retried).
		for _, call := range []string{"create pods", "patch pods"} {
			if got := total(r.Throughput.Controller.Calls, call); got < 6 {
				t.Errorf("%s on the wire = %d, want at least 6", call, got)
			}
		}
		if r.Throughput.DirectReads != 0 {
			t.Errorf("direct task-result reads without faults = %v, want 0", r.Throughput.DirectReads)
		}
	})
	t.Run("the raw client does exactly the minimum writes", func(t *testing.T) {
		// per workflow: create + final update; per pod: create, workflow update, finalizer patch
		if got, want := r.Throughput.Raw.WritesPerPod, float64(3*2+6*3)/6; got != want {
			t.Errorf("raw writes per pod = %v, want %v (calls %+v)", got, want, r.Throughput.Raw.Calls)
		}
	})
	t.Run("both action kinds finish for every workflow", func(t *testing.T) {
		if r.Actions.Suspend.Count != 3 || r.Actions.Resume.Count != 3 || r.Actions.Failed != 0 {
			t.Errorf("actions: %+v", r.Actions)
		}
	})
	t.Run("late results lose no output and are read past the cache", func(t *testing.T) {
		if r.LateResults.SucceededWithoutOutputs != 0 {
			t.Errorf("%d nodes succeeded without outputs", r.LateResults.SucceededWithoutOutputs)
		}
		if r.LateResults.DirectReadsPerPod <= 0 {
			t.Errorf("no direct reads under a %s result delay", o.LateResultDelay)
		}
	})
	t.Run("the memory scenario measures the controller process", func(t *testing.T) {
		if r.Memory.LoadedHeapInuseBytes <= 0 || r.Memory.LoadedRSSBytes <= 0 || r.Memory.BaselineHeapInuseBytes <= 0 {
			t.Errorf("memory: %+v", r.Memory)
		}
	})
	t.Run("every target gets a verdict from this run and the report prints them", func(t *testing.T) {
		if len(r.Targets) != 7 {
			t.Errorf("targets: %d, want 7", len(r.Targets))
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
		if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"targets"`) {
			t.Errorf("JSON report: %v\n%s", err, js.String())
		}
	})
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
