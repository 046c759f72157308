package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/bench/workload"
)

// MemoryResult is the controller process's memory with its caches full of workflows.
type MemoryResult struct {
	Workflows int `json:"workflows"`
	// Baseline is after a one-pod warm-up in an otherwise empty namespace; Loaded with every workflow
	// cached (wfguard: reconciled once) and the RSS settled. Heap is go_memstats_heap_inuse_bytes from the
	// controller's /metrics (0 when it serves none); RSS is VmRSS from /proc/<pid>/status.
	BaselineHeapInuseBytes float64 `json:"baselineHeapInuseBytes"`
	BaselineRSSBytes       float64 `json:"baselineRSSBytes"`
	LoadedHeapInuseBytes   float64 `json:"loadedHeapInuseBytes"`
	LoadedRSSBytes         float64 `json:"loadedRSSBytes"`
	// HeapBytesPerWorkflow is (loaded - baseline heap) / workflows.
	HeapBytesPerWorkflow float64 `json:"heapBytesPerWorkflow"`
}

// memory runs each controller on a namespace that fills with completed workflows.
func (e *env) memory(ctx context.Context, report *Report) error {
	report.Memory = map[string]*MemoryResult{}
	return e.eachController(func(c string) error {
		res, err := e.memoryOf(ctx, c)
		if err != nil {
			return err
		}
		report.Memory[c] = res
		return nil
	})
}

func (e *env) memoryOf(ctx context.Context, c string) (*MemoryResult, error) {
	ns, err := e.namespace(ctx, "bench-memory-"+c)
	if err != nil {
		return nil, err
	}
	obs, err := startObserver(ctx, e.kube, e.argo, ns)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	p, err := e.startController(ctx, c, ns, processOptions{metrics: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop() }()
	if err := e.warmUp(ctx, p, obs); err != nil {
		return nil, err
	}
	res := &MemoryResult{Workflows: e.opts.MemoryWorkflows}
	if res.BaselineHeapInuseBytes, res.BaselineRSSBytes, err = e.settledMemory(ctx, p); err != nil {
		return nil, err
	}
	if err := e.createCompleted(ctx, ns, res.Workflows); err != nil {
		return nil, err
	}
	if c == ControllerWFGuard {
		var m map[string]float64
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
			m, err = p.metrics(ctx)
			return err == nil && m["wfguard_reconcile_total"] >= float64(res.Workflows), nil
		}); err != nil {
			return nil, p.failed(fmt.Errorf("waiting for the controller to reconcile %d workflows (last: %v): %w", res.Workflows, m["wfguard_reconcile_total"], err))
		}
	}
	// Argo does not reconcile completed workflows (they are only cached), so for both the end of the
	// load is when the RSS stops growing.
	if res.LoadedHeapInuseBytes, res.LoadedRSSBytes, err = e.settledMemory(ctx, p); err != nil {
		return nil, err
	}
	if res.Workflows > 0 && res.BaselineHeapInuseBytes > 0 {
		res.HeapBytesPerWorkflow = (res.LoadedHeapInuseBytes - res.BaselineHeapInuseBytes) / float64(res.Workflows)
	}
	return res, nil
}

// settledMemory samples the controller's RSS every second until three samples in a row are within 1% of
// each other (at most two minutes), then returns its heap in use (0 without /metrics) and that RSS.
func (e *env) settledMemory(ctx context.Context, p *process) (heap, rss float64, err error) {
	var last []float64
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		r, err := p.rss()
		if err != nil {
			return false, err
		}
		last = append(last, r)
		return settled(last, 3, 0.01), nil
	})
	if err != nil {
		return 0, 0, p.failed(fmt.Errorf("waiting for the RSS to settle (samples %v): %w", last, err))
	}
	rss = last[len(last)-1]
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, 0, p.failed(fmt.Errorf("scraping %s: %w", p.metricsURL, err))
	}
	return m["go_memstats_heap_inuse_bytes"], rss, nil
}

// settled reports whether the last n samples lie within the fraction tol of their maximum.
func settled(samples []float64, n int, tol float64) bool {
	if len(samples) < n {
		return false
	}
	lo, hi := samples[len(samples)-n], samples[len(samples)-n]
	for _, s := range samples[len(samples)-n:] {
		lo, hi = min(lo, s), max(hi, s)
	}
	return hi-lo <= tol*hi
}

// createCompleted stores k finished three-node workflows, the shape a busy namespace keeps for days.
func (e *env) createCompleted(ctx context.Context, ns string, k int) error {
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	finished := metav1.NewTime(time.Now())
	return inParallel(16, k, func(i int) error {
		wf := chainWorkflow(fmt.Sprintf("done-%05d", i), 3)
		wf.Labels = map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}
		wf.Status = wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: started, FinishedAt: finished, Nodes: wfv1.Nodes{}}
		for j := range 3 {
			id := fmt.Sprintf("%s-%d", wf.Name, j)
			wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: fmt.Sprintf("%s.t%d", wf.Name, j), DisplayName: fmt.Sprintf("t%d", j),
				Type: wfv1.NodeTypePod, TemplateName: "step", Phase: wfv1.NodeSucceeded, StartedAt: started, FinishedAt: finished,
				Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: workload.OutputParameter, Value: wfv1.AnyStringPtr("ok")}}}}
		}
		if _, err := e.argo.ArgoprojV1alpha1().Workflows(ns).Create(ctx, wf, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating completed workflow %s: %w", wf.Name, err)
		}
		return nil
	})
}

// scrape reads a Prometheus text exposition: each metric summed over its label sets by name, and each
// labelled series by name{label=value,...}, without quotes.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		space := strings.LastIndexByte(line, ' ')
		if space < 0 {
			continue
		}
		name := line[:space]
		v, err := strconv.ParseFloat(line[space+1:], 64)
		if err != nil {
			continue
		}
		if brace := strings.IndexByte(name, '{'); brace >= 0 {
			out[strings.ReplaceAll(name, `"`, "")] = v // e.g. wfguard_pods_created_total{phase=x}
			name = name[:brace]
		}
		out[name] += v
	}
	return out, sc.Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
