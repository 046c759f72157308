package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// sampleReport is a report of both controllers with round figures, evaluated.
func sampleReport(controllers ...string) *Report {
	zero := 0.0
	r := &Report{Controllers: controllers, Sizes: Sizes{Actions: 50, MemoryWorkflows: 10000, LateResultDelaySecs: 30},
		Latency: map[string]*LatencyResult{}, Actions: map[string]*ActionsResult{}, LateResults: map[string]*LateResultsResult{},
		Memory: map[string]*MemoryResult{}}
	r.Throughput = &ThroughputResult{Workflows: 10, Pods: 50, Controllers: map[string]*ControllerThroughput{},
		Raw: RunStats{Seconds: 2.5, WorkflowsPerSec: 4, PodsPerSec: 20, WritesPerPod: 3.4, Calls: []APICall{{Call: "create pods", Total: 50, PerPod: 1}},
			MachineCPUSeconds: map[string]float64{"kube-apiserver": 2}},
		RawPipeline: RunStats{Seconds: 2, WorkflowsPerSec: 5, PodsPerSec: 25, WritesPerPod: 7, HopLatency: Latencies{Count: 40, P50Ms: 50, P99Ms: 250},
			MachineCPUSeconds: map[string]float64{"kube-apiserver": 1.5},
			Calls:             []APICall{{Call: "create pods", Total: 50, PerPod: 1}, {Call: "create events", Total: 100, PerPod: 2}}}}
	for i, c := range controllers {
		k := float64(i + 1) // wfguard 1, argo 2
		r.Latency[c] = &LatencyResult{All: Latencies{Count: 17, P50Ms: 10 * k, P99Ms: 100 * k}}
		run := ControllerRun{RunStats: RunStats{Seconds: 2.5 * k, WorkflowsPerSec: 4 / k, PodsPerSec: 20 / k, HopLatency: Latencies{Count: 40, P50Ms: 40 * k, P99Ms: 300 * k}, Calls: []APICall{
			{Call: "create pods", Total: 50, PerPod: 1}, {Call: fmt.Sprintf("patch pods"), Total: int(50 * k), PerPod: k}},
			MachineCPUSeconds: map[string]float64{"kube-apiserver": 2 * k, "etcd": k}},
			CPUSeconds: 0.15 * k, CPUSecondsPer1000: 3 * k, Phases: map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: 10}}
		if c == ControllerWFGuard {
			run.Counters = map[string]float64{"wfguard_pods_created_total": 50, "wfguard_pod_finalizers_released_total{reason=persisted}": 50}
			run.DirectReads = &zero
		}
		r.Throughput.Controllers[c] = &ControllerThroughput{ControllerRun: run}
		r.Actions[c] = &ActionsResult{Concurrent: 50, All: Latencies{Count: 100, P50Ms: 20 * k, P99Ms: 200 * k}, Suspend: Latencies{Count: 50, P50Ms: 20 * k, P99Ms: 200 * k}}
		r.LateResults[c] = &LateResultsResult{Pods: 12, SucceededWithoutOutputs: 3 * i, Run: ControllerRun{RunStats: RunStats{Seconds: 95 * k}}}
		r.Memory[c] = &MemoryResult{Workflows: 10000, LoadedRSSBytes: 100 << 20 * k, BaselineRSSBytes: 20 << 20}
	}
	r.Memory[controllers[0]].LoadedHeapInuseBytes = 50 << 20
	if len(controllers) > 1 {
		r.RawActions = &ActionsResult{Concurrent: 50, All: Latencies{Count: 100, P50Ms: 5, P99Ms: 50}, Suspend: Latencies{Count: 50, P50Ms: 5, P99Ms: 50}}
	}
	r.Throughput.ratios()
	r.evaluate()
	return r
}

// unmeasuredRaw is sampleReport of wfguard whose minimal raw client's run measured no process's CPU.
func unmeasuredRaw() *Report {
	r := sampleReport(ControllerWFGuard)
	r.Throughput.Raw.MachineCPUSeconds = nil
	r.evaluate()
	return r
}

// unmeasuredPipeline is sampleReport of wfguard whose pipeline-writes raw client's run measured no process's CPU.
func unmeasuredPipeline() *Report {
	r := sampleReport(ControllerWFGuard)
	r.Throughput.RawPipeline.MachineCPUSeconds = nil
	r.evaluate()
	return r
}

func row(rows []ComparisonRow, figure string) *ComparisonRow {
	for i := range rows {
		if rows[i].Figure == figure {
			return &rows[i]
		}
	}
	return nil
}

func TestTheComparisonTable(t *testing.T) {
	both := sampleReport(ControllerWFGuard, ControllerArgo)
	for _, tc := range []struct {
		name                            string
		report                          *Report
		figure                          string
		wfguard, argo, raw, rawPipeline string
	}{
		{"throughput shows wfguard, argo and both raw clients side by side", both, "throughput pods/s", "20.0", "10.0", "20.0", "25.0"},
		{"the ratio to the pipeline-writes raw client is DESIGN.md's measure", both, "throughput ratio to raw (pipeline writes)", "80%", "40%", "-", "100%"},
		{"the ratio to the minimal raw client stays beside it, the pipeline writes' own included", both, "throughput ratio to raw (minimum)", "100%", "50%", "100%", "125%"},
		{"hop latency under load is compared with the pipeline-writes raw client's", both, "hop latency ratio to raw (pipeline writes) p50 / p99", "0.80× / 1.20×", "1.60× / 2.40×", "-", "1.00× / 1.00×"},
		{"each call of any column gets a row, 0.00 where a column made none", both, "API calls per pod: patch pods", "1.00", "2.00", "0.00", "0.00"},
		{"the pipeline-writes raw client's Events get their row", both, "API calls per pod: create events", "0.00", "0.00", "0.00", "2.00"},
		{"CPU per 1,000 pods is the controllers' alone", both, "CPU s per 1,000 pods (controller process)", "3.00", "6.00", "-", "-"},
		{"the API server's CPU is charged per 1,000 pods to every subject, with the cores it kept busy", both, "CPU s per 1,000 pods (cores busy): kube-apiserver", "40.00 (0.80)", "80.00 (0.80)", "40.00 (0.80)", "30.00 (0.75)"},
		{"a process a subject's runs did not measure has a dash", both, "CPU s per 1,000 pods (cores busy): etcd", "20.00 (0.40)", "40.00 (0.40)", "-", "-"},
		{"a subject's CPU per 1,000 pods sums every measured process's and its controller's", both, "CPU s per 1,000 pods (cores busy): all, the controller's included", "63.00 (1.26)", "126.00 (1.26)", "40.00 (0.80)", "30.00 (0.75)"},
		{"each subject's CPU per pod is put against the pipeline-writes raw client's", both, "CPU per pod, all processes, ratio to raw (pipeline writes)", "2.10×", "4.20×", "1.33×", "1.00×"},
		{"a subject whose run measured no process has no total and no ratio", unmeasuredRaw(), "CPU per pod, all processes, ratio to raw (pipeline writes)", "2.10×", "-", "-", "1.00×"},
		{"without the pipeline-writes raw client's total there is no ratio at all", unmeasuredPipeline(), "CPU per pod, all processes, ratio to raw (pipeline writes)", "-", "-", "-", "-"},
		{"scheduling latency has no raw figure", both, "scheduling latency p50 / p99", "10.0 / 100.0 ms (n=17)", "20.0 / 200.0 ms (n=17)", "-", "-"},
		{"lost outputs are counted per controller", both, "late results (30 s watch delay): outputs lost", "0 of 12 pods", "3 of 12 pods", "-", "-"},
		{"a heap argo did not report reads n/a", both, "heap in use, 10000 workflows cached (baseline)", "50.0 MiB (n/a)", "n/a (n/a)", "-", "-"},
		{"a controller not run has dashes", sampleReport(ControllerWFGuard), "throughput pods/s", "20.0", "-", "20.0", "25.0"},
		{"action latency puts the raw client's floor beside both controllers", both, "suspend p50 / p99, to the client's return¹", "20.0 / 200.0 ms (n=50)", "40.0 / 400.0 ms (n=50)", "5.0 / 50.0 ms (n=50)", "-"},
		{"action latency without a raw run has a dash", sampleReport(ControllerWFGuard), "suspend p50 / p99, to the client's return¹", "20.0 / 200.0 ms (n=50)", "-", "-", "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := row(tc.report.Comparison, tc.figure)
			if got == nil {
				t.Fatalf("no row %q in %+v", tc.figure, tc.report.Comparison)
			}
			if got.WFGuard != tc.wfguard || got.Argo != tc.argo || got.Raw != tc.raw || got.RawPipeline != tc.rawPipeline {
				t.Errorf("%q = %q / %q / %q / %q, want %q / %q / %q / %q", tc.figure, got.WFGuard, got.Argo, got.Raw, got.RawPipeline,
					tc.wfguard, tc.argo, tc.raw, tc.rawPipeline)
			}
		})
	}
	t.Run("the printed table has one line per row with the four columns in order", func(t *testing.T) {
		var b bytes.Buffer
		both.WriteText(&b)
		text := b.String()
		if !regexp.MustCompile(`(?m)^figure +wfguard +argo +raw client \(minimum\) +raw client \(pipeline writes\)$`).MatchString(text) {
			t.Fatalf("no header naming wfguard, argo and both raw clients:\n%s", text)
		}
		for _, r := range both.Comparison {
			if !strings.Contains(text, r.Figure) {
				t.Errorf("the printed table lacks %q", r.Figure)
			}
		}
		if !strings.Contains(text, "¹ wfguard: "+howWFGuard) {
			t.Errorf("the table does not say what the client's return is for each controller:\n%s", text)
		}
	})
	t.Run("targets keep wfguard's verdict and put argo's figure and verdict beside it", func(t *testing.T) {
		var lat Target
		for _, tg := range both.Targets {
			if tg.Name == "scheduling latency" {
				lat = tg
			}
		}
		if lat.Verdict != verdictMet || lat.ArgoVerdict != verdictMet || !strings.Contains(lat.ArgoMeasured, "p99 200.0 ms") {
			t.Errorf("scheduling latency target: %+v", lat)
		}
		for _, tg := range both.Targets {
			if tg.Name == "orphan sweep" && (tg.ArgoVerdict != verdictNotRun || tg.ArgoMeasured != "-") {
				t.Errorf("argo has no orphan sweep figure, got %+v", tg)
			}
		}
	})
	t.Run("the JSON report holds the comparison rows", func(t *testing.T) {
		back := roundTrip(t, both)
		if len(back.Comparison) != len(both.Comparison) || back.Comparison[0] != both.Comparison[0] {
			t.Errorf("comparison after a JSON round trip: %+v", back.Comparison)
		}
	})
}

func TestTheActionTargetAndItsFloor(t *testing.T) {
	for _, tc := range []struct {
		sentence    string
		concurrent  int
		p99Ms       float64
		wantTarget  string
		wantVerdict string
	}{
		{"50 concurrent actions are held to DESIGN.md's 500 ms", 50, 450, "p99 < 500 ms with 50 concurrent", "met"},
		{"50 concurrent actions over 500 ms miss it", 50, 600, "p99 < 500 ms with 50 concurrent", "NOT MET"},
		{"500 concurrent actions are held to the issue's 1 s", 500, 900, "p99 < 1000 ms with 500 concurrent", "met"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			r := sampleReport(ControllerWFGuard, ControllerArgo)
			r.Sizes.Actions = tc.concurrent
			r.Actions[ControllerWFGuard].All.P99Ms = tc.p99Ms
			r.evaluate()
			for _, tg := range r.Targets {
				if tg.Name != "WorkflowAction latency" {
					continue
				}
				if tg.Target != tc.wantTarget || tg.Verdict != tc.wantVerdict || !strings.Contains(tg.Measured, "raw client's floor p99 50.0 ms") {
					t.Errorf("target %q measured %q verdict %q, want %q with the floor and %q", tg.Target, tg.Measured, tg.Verdict, tc.wantTarget, tc.wantVerdict)
				}
			}
		})
	}
}

func TestThroughputAndHopLatencyAreJudgedAgainstThePipelineWritesRawClient(t *testing.T) {
	both := sampleReport(ControllerWFGuard, ControllerArgo)
	target := func(name string) Target {
		for _, tg := range both.Targets {
			if tg.Name == name {
				return tg
			}
		}
		t.Fatalf("no target %q in %+v", name, both.Targets)
		return Target{}
	}
	for _, tc := range []struct {
		name, target              string
		measured, verdict         string
		argoMeasured, argoVerdict string
	}{
		{"throughput under 90% of the pipeline writes is not met, and the minimal raw client's ratio is shown beside it", "throughput",
			"80% (20.0 vs 25.0 pods/s); 100% of the minimal raw client (20.0 pods/s)", verdictNotMet,
			"40% (10.0 vs 25.0 pods/s); 50% of the minimal raw client (20.0 pods/s)", verdictNotMet},
		{"hop latency within 1.2× at p50 and p99 is met; beyond it at either is not", "hop latency under load",
			"p50 0.80×, p99 1.20× (40.0 / 300.0 ms vs 50.0 / 250.0 ms)", verdictMet,
			"p50 1.60×, p99 2.40× (80.0 / 600.0 ms vs 50.0 / 250.0 ms)", verdictNotMet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := target(tc.target)
			if got.Measured != tc.measured || got.Verdict != tc.verdict || got.ArgoMeasured != tc.argoMeasured || got.ArgoVerdict != tc.argoVerdict {
				t.Errorf("%s:\n got %q %s / %q %s\nwant %q %s / %q %s", tc.target, got.Measured, got.Verdict, got.ArgoMeasured, got.ArgoVerdict,
					tc.measured, tc.verdict, tc.argoMeasured, tc.argoVerdict)
			}
		})
	}
	t.Run("a throughput of 90% of the pipeline writes is met", func(t *testing.T) {
		r := sampleReport(ControllerWFGuard)
		r.Throughput.RawPipeline.PodsPerSec = 20 / 0.9
		r.Throughput.ratios()
		r.evaluate()
		for _, tg := range r.Targets {
			if tg.Name == "throughput" && tg.Verdict != verdictMet {
				t.Errorf("throughput at 90%% of the pipeline writes: %+v", tg)
			}
		}
	})
	t.Run("without a raw figure the ratios are 0, not infinite, and hop latency is not run", func(t *testing.T) {
		r := sampleReport(ControllerWFGuard)
		r.Throughput.Raw, r.Throughput.RawPipeline = RunStats{}, RunStats{}
		r.Throughput.ratios()
		r.evaluate()
		w := r.Throughput.Controllers[ControllerWFGuard]
		if w.Ratio != 0 || w.PipelineRatio != 0 || w.HopP50Ratio != 0 || w.HopP99Ratio != 0 {
			t.Errorf("ratios without raw figures: %+v", w)
		}
		for _, tg := range r.Targets {
			if tg.Name == "hop latency under load" && tg.Verdict != verdictNotRun {
				t.Errorf("hop latency without a raw figure: %+v", tg)
			}
		}
	})
}

func TestScrapingKeepsEachLabelledSeriesAndSumsEachMetricByName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP x\n# TYPE wfguard_pod_finalizers_released_total counter\n"+
			"wfguard_pod_finalizers_released_total{reason=\"persisted\"} 6\n"+
			"wfguard_pod_finalizers_released_total{reason=\"orphaned\"} 2\n"+
			"go_memstats_heap_inuse_bytes 1.5e+06\n")
	}))
	defer srv.Close()
	m, err := scrape(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"wfguard_pod_finalizers_released_total": 8, "wfguard_pod_finalizers_released_total{reason=persisted}": 6,
		"go_memstats_heap_inuse_bytes": 1.5e6} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestAFailedScenarioAndPodsStillHeldAreReportedBesideTheOtherFigures(t *testing.T) {
	r := sampleReport(ControllerWFGuard, ControllerArgo)
	r.Sizes.ScaleWorkflows, r.Sizes.ScalePodsPerWorkflow = 1000, 10
	r.Scale = map[string]*ScaleResult{
		ControllerWFGuard: {Workflows: 1000, PodsPerWorkflow: 10, Seconds: 568.9, ReleasedSeconds: 569.2},
		ControllerArgo:    {Workflows: 1000, PodsPerWorkflow: 10, Seconds: 900, ReleasedSeconds: 1602, HeldAtDeadline: 578},
	}
	r.Failures = []ScenarioFailure{{Scenario: "memory", Error: "argo: waiting for the RSS to settle: context deadline exceeded"}}
	r.evaluate()
	t.Run("pods still held at the release deadline are a figure, not a failure", func(t *testing.T) {
		got := row(r.Comparison, "scale 1000 × 10: time until every pod is released")
		if got == nil {
			t.Fatalf("no release row in %+v", r.Comparison)
		}
		if got.WFGuard != "569.2 s" || got.Argo != "> 1602.0 s (578 pods still held)" {
			t.Errorf("release row = %q / %q", got.WFGuard, got.Argo)
		}
	})
	t.Run("workflows unfinished at the finish deadline are a figure, not a failure", func(t *testing.T) {
		unfinished := sampleReport(ControllerWFGuard, ControllerArgo)
		unfinished.Sizes.ScaleWorkflows, unfinished.Sizes.ScalePodsPerWorkflow = 1000, 10
		unfinished.Scale = map[string]*ScaleResult{
			ControllerWFGuard: {Workflows: 1000, PodsPerWorkflow: 10, Seconds: 566.5, PodsPerSec: 17.7, ReleasedSeconds: 566.5,
				Phases: map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: 1000}},
			ControllerArgo: {Workflows: 1000, PodsPerWorkflow: 10, Seconds: 1600, ReleasedSeconds: 1600, UnfinishedAtDeadline: 14, HeldAtDeadline: 40,
				Phases: map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: 986, "": 14}},
		}
		unfinished.evaluate()
		for figure, want := range map[string][2]string{
			"scale 1000 × 10: time to finish (pods/s)":          {"566.5 s (17.7)", "> 1600.0 s (14 workflows unfinished)"},
			"scale 1000 × 10: time until every pod is released": {"566.5 s", "not waited for (40 pods held)"},
			"scale 1000 × 10: workflow phases":                  {"1000 Succeeded", "14 unfinished, 986 Succeeded"},
		} {
			got := row(unfinished.Comparison, figure)
			if got == nil || got.WFGuard != want[0] || got.Argo != want[1] {
				t.Errorf("%s = %+v, want %q / %q", figure, got, want[0], want[1])
			}
		}
		var b bytes.Buffer
		unfinished.WriteText(&b)
		if !strings.Contains(b.String(), "done > 1600.0 s (14 workflows unfinished), released not waited for (40 pods held)  - pods/s") {
			t.Errorf("the scale details lack argo's unfinished workflows:\n%s", b.String())
		}
		if !regexp.MustCompile(`wfguard +done 566\.5 s, released 566\.5 s +17\.7 pods/s +heap`).MatchString(b.String()) {
			t.Errorf("the scale details of a finished run should give its time, then its rate once:\n%s", b.String())
		}
		if back := roundTrip(t, unfinished); back.Scale[ControllerArgo].UnfinishedAtDeadline != 14 || back.Scale[ControllerWFGuard].UnfinishedAtDeadline != 0 {
			t.Errorf("after a JSON round trip: argo %+v, wfguard %+v", back.Scale[ControllerArgo], back.Scale[ControllerWFGuard])
		}
	})
	t.Run("the printed report names the failed scenario and keeps the others' targets", func(t *testing.T) {
		var b bytes.Buffer
		r.WriteText(&b)
		text := b.String()
		if !strings.Contains(text, "FAILED scenario memory: argo: waiting for the RSS to settle") {
			t.Errorf("the report does not name the failed scenario:\n%s", text)
		}
		if !regexp.MustCompile(`(?m)^scheduling latency +p50 < 50 ms`).MatchString(text) {
			t.Errorf("the other scenarios' targets are missing:\n%s", text)
		}
	})
	t.Run("the error and the JSON name every failed scenario", func(t *testing.T) {
		if err := r.failuresError(); err == nil || !strings.Contains(err.Error(), "scenario memory: argo: waiting") {
			t.Errorf("failuresError() = %v", err)
		}
		back := roundTrip(t, r)
		if len(back.Failures) != 1 || back.Failures[0] != r.Failures[0] || back.Scale[ControllerArgo].HeldAtDeadline != 578 {
			t.Errorf("after a JSON round trip: failures %+v, argo scale %+v", back.Failures, back.Scale[ControllerArgo])
		}
	})
}

// roundTrip is r as written by WriteJSON and read back.
func roundTrip(t *testing.T, r *Report) Report {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	return back
}
