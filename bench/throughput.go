package bench

import (
	"context"
	"errors"
	"fmt"
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
	// Counters are the controller's own counters at the end of the run (none for the raw client).
	Counters map[string]float64 `json:"counters,omitempty"`
}

// ThroughputResult compares the controller with a raw client doing the minimum writes for the same work.
type ThroughputResult struct {
	Workflows  int      `json:"workflows"`
	Pods       int      `json:"pods"`
	Controller RunStats `json:"controller"`
	Raw        RunStats `json:"raw"`
	Ratio      float64  `json:"ratio"` // controller pods/s ÷ raw pods/s
	// DirectReads are task-result reads past the cache; with no faults they should be 0.
	DirectReads float64 `json:"directReads"`
}

func (e *env) throughput(ctx context.Context, report *Report) error {
	n, m := e.opts.ThroughputWorkflows, e.opts.ThroughputNodes
	res := &ThroughputResult{Workflows: n, Pods: n * m}
	run, directReads, _, err := e.controllerRun(ctx, "bench-throughput", n, m, 0)
	if err != nil {
		return err
	}
	res.Controller, res.DirectReads = run, directReads
	if res.Raw, err = e.rawRun(ctx, n, m); err != nil {
		return fmt.Errorf("raw client: %w", err)
	}
	if res.Raw.PodsPerSec > 0 {
		res.Ratio = res.Controller.PodsPerSec / res.Raw.PodsPerSec
	}
	report.Throughput = res
	return nil
}

// controllerRun submits n chains of m nodes at once in a new namespace and waits for all to finish;
// delay > 0 delays the controller's task-result watch events (the late-results scenario). It returns the
// run, the direct task-result reads and the namespace.
func (e *env) controllerRun(ctx context.Context, prefix string, n, m int, delay time.Duration) (RunStats, float64, string, error) {
	ns, err := e.namespace(ctx, prefix)
	if err != nil {
		return RunStats{}, 0, "", err
	}
	obs, err := startObserver(ctx, e.kube, e.argo, ns)
	if err != nil {
		return RunStats{}, 0, "", err
	}
	defer obs.close()
	calls := newCallCounter()
	o := runOptions{ns: ns, config: calls.wrap(e.config), script: stepScript()}
	if delay > 0 {
		o.wrap = delayResults(delay)
	}
	r, err := e.start(ctx, o)
	if err != nil {
		return RunStats{}, 0, "", err
	}
	defer func() { _ = r.stop() }()
	if err := r.waitSynced(ctx); err != nil {
		return RunStats{}, 0, "", err
	}
	var wfs []*wfv1.Workflow
	for i := range n {
		wfs = append(wfs, chainWorkflow(fmt.Sprintf("wf-%04d", i), m))
	}
	begin := time.Now()
	if err := createAll(ctx, e.argo, ns, wfs); err != nil {
		return RunStats{}, 0, "", err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute+2*time.Duration(m)*delay)
	defer cancel()
	if err := obs.waitWorkflows(waitCtx, names(wfs)); err != nil {
		return RunStats{}, 0, "", err
	}
	elapsed := time.Since(begin)
	if err := allSucceeded(obs, names(wfs)); err != nil {
		return RunStats{}, 0, "", err
	}
	if err := obs.waitReleased(waitCtx); err != nil {
		return RunStats{}, 0, "", err
	}
	// A release's watch event can beat the PATCH response the controller counts it from.
	_ = wait.PollUntilContextTimeout(waitCtx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return r.counter("wfguard_pod_finalizers_released_total") >= float64(n*m), nil
	})
	return RunStats{Seconds: elapsed.Seconds(), WorkflowsPerSec: perSecond(n, elapsed), PodsPerSec: perSecond(n*m, elapsed),
		WritesPerPod: float64(calls.writes()) / float64(n*m), Calls: calls.snapshot(n*m, n),
		HopLatency: summarize(obs.schedulingLatencies(predecessor)), Counters: r.counters()}, r.counter("wfguard_taskresult_direct_reads_total"), ns, nil
}

// createAll creates the workflows with a few concurrent clients, as users submitting at once.
func createAll(ctx context.Context, argo versioned.Interface, ns string, wfs []*wfv1.Workflow) error {
	return inParallel(8, len(wfs), func(i int) error {
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
