package bench

import (
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestEachRoundRotatesTheOrderSoEverySubjectRunsEarlyAndLate(t *testing.T) {
	subjects := []throughputSubject{"wfguard", "argo", subjectRawMinimum, subjectRawPipeline}
	cases := []struct {
		sentence string
		round    int
		want     []throughputSubject
	}{
		{"the first round keeps the given order", 0, subjects},
		{"the second starts with the second subject", 1, []throughputSubject{"argo", subjectRawMinimum, subjectRawPipeline, "wfguard"}},
		{"the fourth puts the first subject last", 3, []throughputSubject{subjectRawPipeline, "wfguard", "argo", subjectRawMinimum}},
		{"the fifth starts over", 4, subjects},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := roundOrder(subjects, tc.round); !slices.Equal(got, tc.want) {
				t.Errorf("round %d order = %v, want %v", tc.round, got, tc.want)
			}
		})
	}
}

func TestByDefaultEverySubjectRunsOnceInEveryPosition(t *testing.T) {
	cases := []struct {
		sentence    string
		controllers []string
		rounds      int
		want        int
	}{
		{"both controllers and the two raw clients run four rounds", []string{"wfguard", "argo"}, 0, 4},
		{"wfguard alone and the two raw clients run three", []string{"wfguard"}, 0, 3},
		{"a count given on the command line wins", []string{"wfguard", "argo"}, 2, 2},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			o := Options{Controllers: tc.controllers, ThroughputRounds: tc.rounds}
			got := o.throughputRounds()
			if got != tc.want {
				t.Fatalf("rounds = %d, want %d", got, tc.want)
			}
			if tc.rounds != 0 {
				return
			}
			subjects := []throughputSubject{subjectRawMinimum, subjectRawPipeline}
			for _, c := range tc.controllers {
				subjects = append(subjects, throughputSubject(c))
			}
			for _, s := range subjects {
				seen := map[int]bool{}
				for r := range got {
					seen[slices.Index(roundOrder(subjects, r), s)] = true
				}
				if len(seen) != len(subjects) {
					t.Errorf("%s ran in %d of %d positions over %d rounds", s, len(seen), len(subjects), got)
				}
			}
		})
	}
}

func TestRoundsMergeIntoOneFigureOverEveryPodAndHop(t *testing.T) {
	reads := func(v float64) *float64 { return &v }
	// Two rounds of 2 workflows × 2 pods: 4 pods in 2 s, then 4 pods in 6 s.
	first := ControllerRun{RunStats: RunStats{Seconds: 2, PodsPerSec: 2, hops: msHops(100, 200),
		Calls:             []APICall{{Call: "create pods", Total: 4, RequestBytes: 4000}, {Call: "get configmaps", Total: 2}},
		Chain:             &ChainBreakdown{Workflows: 2, Mean: ChainTimes{HopsMs: 100}, Slowest: ChainTimes{HopsMs: 200}},
		MachineCPUSeconds: map[string]float64{"kube-apiserver": 1.5}, MachineBusySeconds: 3, APIServer: &APIServerLoad{Requests: 10, WatchEvents: 20, WatchEventBytes: 300}},
		CPUSeconds: 1, Counters: map[string]float64{"wfguard_pods_created_total": 4}, DirectReads: reads(0),
		Phases: map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: 2}}
	first.HopLatency = summarize(first.hops)
	second := ControllerRun{RunStats: RunStats{Seconds: 6, PodsPerSec: 4.0 / 6, hops: msHops(300, 400),
		Calls:             []APICall{{Call: "create pods", Total: 5, RequestBytes: 5500}, {Call: "patch pods", Total: 4}},
		Chain:             &ChainBreakdown{Workflows: 2, Mean: ChainTimes{HopsMs: 300}, Slowest: ChainTimes{HopsMs: 400}},
		MachineCPUSeconds: map[string]float64{"kube-apiserver": 2.5, "etcd": 1}, MachineBusySeconds: 5, APIServer: &APIServerLoad{Requests: 1, WatchEvents: 2, WatchEventBytes: 30}},
		CPUSeconds: 3, Counters: map[string]float64{"wfguard_pods_created_total": 4}, DirectReads: reads(1),
		Phases: map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: 1, wfv1.WorkflowFailed: 1}}
	second.HopLatency = summarize(second.hops)
	got := mergeControllerRuns([]ControllerRun{first, second}, []int{1, 3}, 2, 4)

	checks := []struct {
		sentence  string
		got, want float64
	}{
		{"throughput is every pod over every second", got.PodsPerSec, 8.0 / 8},
		{"workflows per second likewise", got.WorkflowsPerSec, 4.0 / 8},
		{"writes per pod count every round's writes", got.WritesPerPod, 13.0 / 8},
		{"hop latency covers every hop of every round", got.HopLatency.P50Ms, 200},
		{"its p99 too", got.HopLatency.P99Ms, 400},
		{"hops are counted over both rounds", float64(got.HopLatency.Count), 4},
		{"CPU seconds add up", got.CPUSeconds, 4},
		{"CPU per 1,000 pods is over every pod", got.CPUSecondsPer1000, 4.0 * 1000 / 8},
		{"counters add up", got.Counters["wfguard_pods_created_total"], 8},
		{"direct reads add up", *got.DirectReads, 1},
		{"phases add up", float64(got.Phases[wfv1.WorkflowSucceeded]), 3},
		{"calls are summed per call", float64(total(got.Calls, "create pods")), 9},
		{"a call of one round only is kept", float64(total(got.Calls, "get configmaps")), 2},
		{"per-pod rates are over every round's pods", perPod(got.Calls, "patch pods"), 4.0 / 8},
		{"request bytes are summed per call", float64(requestBytes(got.Calls, "create pods")), 9500},
		{"the machine's CPU adds up by process", got.MachineCPUSeconds["kube-apiserver"], 4},
		{"a process of one round only is kept", got.MachineCPUSeconds["etcd"], 1},
		{"the whole machine's CPU adds up", got.MachineBusySeconds, 8},
		{"the API server's requests add up", got.APIServer.Requests, 11},
		{"its watch events too", got.APIServer.WatchEvents, 22},
		{"and their bytes", got.APIServer.WatchEventBytes, 330},
		{"a chain's mean hops are over both rounds' workflows", got.Chain.Mean.HopsMs, 200},
		{"the slowest chain is the rounds' slowest, averaged", got.Chain.Slowest.HopsMs, 300},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.sentence, c.got, c.want)
		}
	}
	wantRounds := []Round{{Position: 1, PodsPerSec: 2, HopP50Ms: 100, HopP99Ms: 200, APIServerCPUSeconds: 1.5},
		{Position: 3, PodsPerSec: 4.0 / 6, HopP50Ms: 300, HopP99Ms: 400, APIServerCPUSeconds: 2.5}}
	if !slices.Equal(got.Rounds, wantRounds) {
		t.Errorf("rounds = %+v, want %+v", got.Rounds, wantRounds)
	}
	if one := mergeControllerRuns([]ControllerRun{first}, []int{1}, 2, 4); one.Rounds != nil || one.PodsPerSec != 2 {
		t.Errorf("a single round is reported as it ran, without a rounds list: %+v", one.RunStats)
	}
}

func requestBytes(calls []APICall, call string) int64 {
	for _, c := range calls {
		if c.Call == call {
			return c.RequestBytes
		}
	}
	return 0
}
