package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// RunStats is one pass of the throughput workload.
type RunStats struct {
	Seconds         float64   `json:"seconds"`
	WorkflowsPerSec float64   `json:"workflowsPerSec"`
	PodsPerSec      float64   `json:"podsPerSec"`
	WritesPerPod    float64   `json:"writesPerPod"`
	Calls           []APICall `json:"calls"`
	// HopLatency is predecessor done → successor pod created, under this run's load.
	HopLatency Latencies `json:"hopLatency"`
	// Rounds are the subject's runs one by one when the scenario ran more than once; the figures above
	// then cover them all (throughput over every pod and second, hop latency over every hop).
	Rounds []Round `json:"rounds,omitempty"`
	// Chain splits the chains' time into the controller's and the node's parts (chain workflows only).
	Chain *ChainBreakdown `json:"chain,omitempty"`
	// MachineCPUSeconds is the CPU time the other processes on the machine used over the run (submit →
	// last completion), by process: the API server and etcd serve every subject, and the bench process
	// holds the simulated node, the observers, the proxies and the raw clients. On a saturated machine
	// what a controller costs them slows its pods.
	MachineCPUSeconds map[string]float64 `json:"machineCpuSeconds,omitempty"`
	// MachineBusySeconds is every process's CPU time on the machine over the same span: what it has beyond
	// the measured processes' and the controller's is other work sharing the machine (other sessions' tests).
	MachineBusySeconds float64 `json:"machineBusySeconds,omitempty"`
	// APIServer is what the API server served over the same span: the same for every subject but for
	// the subject's own requests and the watch events they cause.
	APIServer *APIServerLoad `json:"apiServer,omitempty"`

	hops []time.Duration // the samples behind HopLatency, for merging rounds
}

// ControllerRun is one controller's pass of a workload, as its own process.
type ControllerRun struct {
	RunStats
	// CPUSeconds is the controller process's user + system time over the run (submit → last release).
	CPUSeconds        float64 `json:"cpuSeconds"`
	CPUSecondsPer1000 float64 `json:"cpuSecondsPer1000Pods"`
	// Counters are wfguard's own counters at the end of the run (none for argo).
	Counters map[string]float64 `json:"counters,omitempty"`
	// DirectReads are wfguard's task-result reads past the cache (argo has no such counter).
	DirectReads *float64 `json:"directReads,omitempty"`
	// Phases count the workflows' final phases.
	Phases map[wfv1.WorkflowPhase]int `json:"phases"`
}

// ControllerThroughput is one controller's throughput and its ratios to the raw clients'.
type ControllerThroughput struct {
	ControllerRun
	Ratio float64 `json:"ratio"` // controller pods/s ÷ minimal raw client's pods/s
	// PipelineRatio is controller pods/s ÷ the pipeline-writes raw client's, DESIGN.md's throughput measure.
	PipelineRatio float64 `json:"pipelineRatio"`
	// HopP50Ratio and HopP99Ratio are the controller's hop latency under load ÷ the pipeline-writes raw
	// client's, at p50 and p99.
	HopP50Ratio float64 `json:"hopP50RatioToPipeline"`
	HopP99Ratio float64 `json:"hopP99RatioToPipeline"`
}

// ThroughputResult compares each controller with two raw clients doing the same work without a controller:
// Raw makes the minimum writes, RawPipeline the writes the pipeline makes that users see (DESIGN.md's
// yardstick).
type ThroughputResult struct {
	Workflows int `json:"workflows"` // per round
	Pods      int `json:"pods"`      // per round
	// Rounds is how many times each subject ran; every figure below covers all its rounds.
	Rounds      int                              `json:"rounds"`
	Controllers map[string]*ControllerThroughput `json:"controllers"`
	Raw         RunStats                         `json:"raw"`
	RawPipeline RunStats                         `json:"rawPipeline"`
}

// ratios sets each controller's ratios to the raw clients' runs (0 where a raw figure is 0).
func (res *ThroughputResult) ratios() {
	for _, t := range res.Controllers {
		t.Ratio = ratioOf(t.PodsPerSec, res.Raw.PodsPerSec)
		t.PipelineRatio = ratioOf(t.PodsPerSec, res.RawPipeline.PodsPerSec)
		t.HopP50Ratio = ratioOf(t.HopLatency.P50Ms, res.RawPipeline.HopLatency.P50Ms)
		t.HopP99Ratio = ratioOf(t.HopLatency.P99Ms, res.RawPipeline.HopLatency.P99Ms)
	}
}

func (e *env) throughput(ctx context.Context, report *Report) error {
	n, m := e.opts.ThroughputWorkflows, e.opts.ThroughputNodes
	res := &ThroughputResult{Workflows: n, Pods: n * m, Controllers: map[string]*ControllerThroughput{}}
	var subjects []throughputSubject
	for _, c := range e.opts.Controllers {
		subjects = append(subjects, throughputSubject(c))
	}
	subjects = append(subjects, subjectRawMinimum, subjectRawPipeline)
	runs := map[throughputSubject][]ControllerRun{}
	positions := map[throughputSubject][]int{}
	rounds := e.opts.throughputRounds()
	res.Rounds = rounds
	if err := e.warmControlPlane(ctx, n, m); err != nil {
		return err
	}
	for r := range rounds {
		for i, s := range roundOrder(subjects, r) {
			e.opts.progressf("bench:   round %d of %d, %d of %d: %s", r+1, rounds, i+1, len(subjects), s)
			run, err := e.throughputRun(ctx, s, n, m)
			if err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			runs[s] = append(runs[s], run)
			positions[s] = append(positions[s], i+1)
		}
	}
	for _, c := range e.opts.Controllers {
		s := throughputSubject(c)
		res.Controllers[c] = &ControllerThroughput{ControllerRun: mergeControllerRuns(runs[s], positions[s], n, n*m)}
	}
	res.Raw = mergeControllerRuns(runs[subjectRawMinimum], positions[subjectRawMinimum], n, n*m).RunStats
	res.RawPipeline = mergeControllerRuns(runs[subjectRawPipeline], positions[subjectRawPipeline], n, n*m).RunStats
	res.ratios()
	report.Throughput = res
	return nil
}

// warmControlPlane runs n chains of m pods once with the minimal raw client, not measured. A fresh API
// server's watch cache is small and grows with the events it holds, and watchers opened on it get small
// buffers that fill and close under a burst: the first subject of a scenario ran on a cold control plane
// (the throughput scenario's first controller: its first round's hops were 2-4x its later ones').
func (e *env) warmControlPlane(ctx context.Context, n, m int) error {
	e.opts.progressf("bench:   warm-up, not measured: %s", subjectRawMinimum)
	if _, err := e.rawRun(ctx, n, m, rawMinimum); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// throughputRun runs n chains of m pods once under subject s.
func (e *env) throughputRun(ctx context.Context, s throughputSubject, n, m int) (ControllerRun, error) {
	switch s {
	case subjectRawMinimum:
		stats, err := e.rawRun(ctx, n, m, rawMinimum)
		return ControllerRun{RunStats: stats}, err
	case subjectRawPipeline:
		stats, err := e.rawRun(ctx, n, m, rawPipeline)
		return ControllerRun{RunStats: stats}, err
	}
	c := string(s)
	res, err := e.controllerRun(ctx, c, chainRun{prefix: "bench-throughput-" + c, n: n, m: m, profile: true})
	return res.run, err
}

// chainRun is a controller's run of n chains of m pods, submitted at once.
type chainRun struct {
	prefix string // of the run's namespace
	n, m   int
	// delay > 0 delays the controller's task-result watch events (the late-results scenario).
	delay time.Duration
	// beside are other workflows submitted with the chains, interleaved with them, and waited for: the run's
	// figures are the chains' alone, its CPU and calls are everything's (the hostile scenario's bombs).
	beside []*wfv1.Workflow
	// profile saves CPU profiles of the controller and the API server from the submit, when the bench
	// keeps its logs (env.profiling).
	profile bool
}

// chainRunResult is a controller run, its namespace, and how long after the submit each of the workflows
// submitted beside the chains was seen completed.
type chainRunResult struct {
	run         ControllerRun
	namespace   string
	besideEnded map[string]time.Duration
}

// controllerRun submits a run's workflows at once to controller c in a new namespace and waits for all to
// finish.
func (e *env) controllerRun(ctx context.Context, c string, spec chainRun) (chainRunResult, error) {
	n, m, delay := spec.n, spec.m, spec.delay
	obs, err := e.observedNamespace(ctx, spec.prefix)
	if err != nil {
		return chainRunResult{}, err
	}
	ns := obs.namespace
	defer obs.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return chainRunResult{}, err
	}
	defer node.Stop()
	p, err := e.startController(ctx, c, ns, processOptions{delayResults: delay})
	if err != nil {
		return chainRunResult{}, err
	}
	defer func() { _ = p.stop() }()
	if err := e.warmUp(ctx, p, obs); err != nil {
		return chainRunResult{}, err
	}
	base := p.counters(ctx)
	var wfs []*wfv1.Workflow
	for i := range n {
		wfs = append(wfs, chainWorkflow(fmt.Sprintf("wf-%04d", i), m))
	}
	cpuBefore, err := p.cpuSeconds()
	if err != nil {
		return chainRunResult{}, err
	}
	apiBefore, err := e.apiServerMetrics(ctx, filepath.Join(e.tmp, ns+"-apiserver-metrics-before.txt"))
	if err != nil {
		return chainRunResult{}, err
	}
	machineBefore, busyBefore, err := e.machineCPU()
	if err != nil {
		return chainRunResult{}, err
	}
	var cpuProfile, apiProfile *profileCapture
	if spec.profile {
		cpuProfile = p.startCPUProfile(ctx, filepath.Join(e.tmp, ns+"-"+c+"-cpu.pprof"))
		apiProfile = e.startAPIServerCPUProfile(ctx, filepath.Join(e.tmp, ns+"-apiserver-cpu.pprof"))
	}
	begin := time.Now()
	// Every workflow submitted at once, as the raw clients start theirs: with a few submitters the last
	// was created a fraction of a second later and its start counted against the controller.
	if err := createWith(ctx, e.argo, ns, interleave(wfs, spec.beside), len(wfs)+len(spec.beside)); err != nil {
		return chainRunResult{}, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute+2*time.Duration(m)*delay)
	defer cancel()
	if err := obs.waitWorkflows(waitCtx, append(names(wfs), names(spec.beside)...)); err != nil {
		return chainRunResult{}, p.failed(err)
	}
	machineAfter, busyAfter, err := e.machineCPU()
	if err != nil {
		return chainRunResult{}, err
	}
	apiAfter, err := e.apiServerMetrics(ctx, filepath.Join(e.tmp, ns+"-apiserver-metrics-after.txt"))
	if err != nil {
		return chainRunResult{}, err
	}
	apiLoad := apiServerLoad(apiBefore, apiAfter)
	elapsed := obs.lastCompleted(names(wfs)).Sub(begin)
	chain := obs.chainTimes(begin, names(wfs))
	// Under late results a controller may fail a workflow whose consumer lacks its input: that is an outcome
	// to report (Phases), not a broken run.
	if err := allSucceeded(obs, names(wfs)); err != nil && delay == 0 {
		return chainRunResult{}, p.failed(err)
	}
	if err := obs.waitReleased(waitCtx); err != nil {
		return chainRunResult{}, p.failed(err)
	}
	cpuAfter, err := p.cpuSeconds()
	if err != nil {
		return chainRunResult{}, err
	}
	if err := settleEvents(waitCtx, p.calls); err != nil {
		return chainRunResult{}, p.failed(err)
	}
	hops := obs.schedulingLatencies(predecessor)
	run := ControllerRun{RunStats: RunStats{Seconds: elapsed.Seconds(), WorkflowsPerSec: perSecond(n, elapsed), PodsPerSec: perSecond(n*m, elapsed),
		WritesPerPod: float64(p.calls.writes()) / float64(n*m), Calls: p.calls.snapshot(n*m, n),
		HopLatency: summarize(hops), hops: hops, Chain: &chain, MachineCPUSeconds: delta(machineAfter, machineBefore), MachineBusySeconds: busyAfter - busyBefore,
		APIServer: &apiLoad},
		CPUSeconds: cpuAfter - cpuBefore, CPUSecondsPer1000: (cpuAfter - cpuBefore) * 1000 / float64(n*m), Phases: obs.phases(names(wfs))}
	if c == ControllerWFGuard {
		// A release's watch event can beat the PATCH response the controller counts it from.
		var counters map[string]float64
		_ = wait.PollUntilContextTimeout(waitCtx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			counters = p.counters(ctx)
			return counters["wfguard_pod_finalizers_released_total"]-base["wfguard_pod_finalizers_released_total"] >= float64(n*m), nil
		})
		run.Counters = delta(counters, base)
		reads := run.Counters["wfguard_taskresult_direct_reads_total"]
		run.DirectReads = &reads
	}
	if err := p.saveProfiles(ctx, cpuProfile, filepath.Join(e.tmp, ns+"-"+c+"-")); err != nil {
		return chainRunResult{}, err
	}
	if err := apiProfile.wait(); err != nil {
		return chainRunResult{}, err
	}
	return chainRunResult{run: run, namespace: ns, besideEnded: obs.completedSince(begin, names(spec.beside))}, nil
}

// delta is after - before, key by key (the run's share of cumulative counters).
func delta(after, before map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// interleave spreads beside evenly among workflows, in order: with 100 workflows and 20 beside, one
// after every fifth; what is left of beside when workflows run out goes last.
func interleave(workflows, beside []*wfv1.Workflow) []*wfv1.Workflow {
	out := make([]*wfv1.Workflow, 0, len(workflows)+len(beside))
	j := 0
	for i, wf := range workflows {
		out = append(out, wf)
		// beside[j] goes after the first (j+1)/len(beside) of the workflows.
		for j < len(beside) && (j+1)*len(workflows) <= (i+1)*len(beside) {
			out = append(out, beside[j])
			j++
		}
	}
	return append(out, beside[j:]...)
}

// submitters is how many concurrent clients createAll submits with, as users submitting at once.
const submitters = 8

// createAll creates the workflows with a few concurrent clients (submitters).
func createAll(ctx context.Context, argo versioned.Interface, ns string, wfs []*wfv1.Workflow) error {
	return createWith(ctx, argo, ns, wfs, submitters)
}

// createWith creates the workflows with the given number of concurrent clients.
func createWith(ctx context.Context, argo versioned.Interface, ns string, wfs []*wfv1.Workflow, clients int) error {
	return inParallel(clients, len(wfs), func(i int) error {
		if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(ctx, wfs[i], metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("submitting %s: %w", wfs[i].Name, err)
		}
		return nil
	})
}

// inParallel runs f(0..n-1) on the given number of goroutines and joins their errors.
func inParallel(workers, n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podsMeasured is the pods of every round.
func (res *ThroughputResult) podsMeasured() int { return res.Pods * max(res.Rounds, 1) }
