package bench

import (
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// Round is one run of a subject in the throughput scenario: where it ran in its round and what it measured.
type Round struct {
	// Position is the run's place in its round's order (1: first).
	Position   int     `json:"position"`
	PodsPerSec float64 `json:"podsPerSec"`
	HopP50Ms   float64 `json:"hopP50Ms"`
	HopP99Ms   float64 `json:"hopP99Ms"`
	// APIServerCPUSeconds is the API server's CPU time over the run: it varies from round to round for
	// the same load (APIServerLoad), so a subject's share of it is read round by round.
	APIServerCPUSeconds float64 `json:"apiServerCpuSeconds,omitempty"`
}

// throughputSubject is one thing the throughput scenario measures: a controller or a raw client.
type throughputSubject string

const (
	subjectRawMinimum  throughputSubject = "raw client (minimum writes)"
	subjectRawPipeline throughputSubject = "raw client (pipeline writes)"
)

// roundOrder is the order of round r: the subjects rotated by r, so that across rounds each runs early and
// late. The API server's watch cache grows during a bench (and with it each new watcher's buffer), so a
// fixed order favoured whoever ran last.
func roundOrder[T any](subjects []T, r int) []T {
	if len(subjects) == 0 {
		return nil
	}
	k := r % len(subjects)
	return append(slices.Clone(subjects[k:]), subjects[:k]...)
}

// throughputRounds is how many rounds the throughput scenario runs: ThroughputRounds when set, else one
// per subject (each controller and both raw clients), so that the rotation puts every subject once in
// every position. With fewer rounds than subjects some run first and none runs last, or the reverse, and
// one round's luck weighs on one subject more than on another.
func (o Options) throughputRounds() int {
	if o.ThroughputRounds > 0 {
		return o.ThroughputRounds
	}
	return len(o.Controllers) + 2
}

// mergeRunStats combines a subject's rounds: rates over all their pods and seconds, hop latency over every
// hop of every round, calls summed.
func mergeRunStats(runs []RunStats, positions []int, workflows, pods int) RunStats {
	if len(runs) == 1 {
		return runs[0]
	}
	var out RunStats
	var seconds float64
	summed := newCallCounter()
	var chains []ChainBreakdown
	for i, r := range runs {
		seconds += r.Seconds
		if r.Chain != nil {
			chains = append(chains, *r.Chain)
		}
		out.hops = append(out.hops, r.hops...)
		for name, cpu := range r.MachineCPUSeconds {
			if out.MachineCPUSeconds == nil {
				out.MachineCPUSeconds = map[string]float64{}
			}
			out.MachineCPUSeconds[name] += cpu
		}
		for _, c := range r.Calls {
			summed.counts[c.Call] += c.Total
			summed.bytes[c.Call] += c.RequestBytes
		}
		out.MachineBusySeconds += r.MachineBusySeconds
		out.APIServer = out.APIServer.add(r.APIServer)
		out.Rounds = append(out.Rounds, Round{Position: positions[i], PodsPerSec: r.PodsPerSec, HopP50Ms: r.HopLatency.P50Ms, HopP99Ms: r.HopLatency.P99Ms,
			APIServerCPUSeconds: r.MachineCPUSeconds[controlplane.KubeAPIServerBinary]})
	}
	n := len(runs)
	elapsed := time.Duration(seconds * float64(time.Second))
	out.Seconds = seconds
	out.WorkflowsPerSec = perSecond(n*workflows, elapsed)
	out.PodsPerSec = perSecond(n*pods, elapsed)
	out.Calls = summed.snapshot(n*pods, n*workflows)
	out.WritesPerPod = float64(summed.writes()) / float64(max(n*pods, 1))
	out.HopLatency = summarize(out.hops)
	if len(chains) > 0 {
		merged := mergeChainBreakdowns(chains)
		out.Chain = &merged
	}
	return out
}

// mergeControllerRuns is mergeRunStats for a controller, with its CPU, counters and phases summed.
func mergeControllerRuns(runs []ControllerRun, positions []int, workflows, pods int) ControllerRun {
	if len(runs) == 1 {
		return runs[0]
	}
	stats := make([]RunStats, len(runs))
	out := ControllerRun{Phases: map[wfv1.WorkflowPhase]int{}}
	for i, r := range runs {
		stats[i] = r.RunStats
		out.CPUSeconds += r.CPUSeconds
		for phase, n := range r.Phases {
			out.Phases[phase] += n
		}
		if r.Counters != nil {
			if out.Counters == nil {
				out.Counters = map[string]float64{}
			}
			for k, v := range r.Counters {
				out.Counters[k] += v
			}
		}
		if r.DirectReads != nil {
			sum := *r.DirectReads
			if out.DirectReads != nil {
				sum += *out.DirectReads
			}
			out.DirectReads = &sum
		}
	}
	out.RunStats = mergeRunStats(stats, positions, workflows, pods)
	out.CPUSecondsPer1000 = out.CPUSeconds * 1000 / float64(max(len(runs)*pods, 1))
	return out
}
