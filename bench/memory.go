package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
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
	// Baseline is with an empty namespace, Loaded with every workflow cached and reconciled once.
	BaselineHeapInuseBytes float64 `json:"baselineHeapInuseBytes"`
	BaselineRSSBytes       float64 `json:"baselineRSSBytes"`
	LoadedHeapInuseBytes   float64 `json:"loadedHeapInuseBytes"`
	LoadedRSSBytes         float64 `json:"loadedRSSBytes"`
	// HeapBytesPerWorkflow is (loaded - baseline heap) / workflows.
	HeapBytesPerWorkflow float64 `json:"heapBytesPerWorkflow"`
}

// memory runs the wfguard binary as its own process, so heap and RSS are the controller's alone.
func (e *env) memory(ctx context.Context, report *Report) error {
	if e.opts.ControllerBinary == "" {
		return nil
	}
	ns, err := e.namespace(ctx, "bench-memory")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	ctrlCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctrlCtx, e.opts.ControllerBinary, "controller", "--kubeconfig", e.cp.Kubeconfig,
		"--namespaced", "--managed-namespace", ns, "--leader-elect=false", "--metrics-port", strconv.Itoa(port),
		"--health-port", "0", "--qps", "500", "--burst", "1000", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", e.opts.ControllerBinary, err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)

	res := &MemoryResult{Workflows: e.opts.MemoryWorkflows}
	var m map[string]float64
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err = scrape(ctx, url)
		return err == nil && m["go_memstats_heap_inuse_bytes"] > 0, nil
	}); err != nil {
		return fmt.Errorf("waiting for the controller's metrics at %s: %w", url, err)
	}
	res.BaselineHeapInuseBytes, res.BaselineRSSBytes = m["go_memstats_heap_inuse_bytes"], m["process_resident_memory_bytes"]

	if err := e.createCompleted(ctx, ns, res.Workflows); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err = scrape(ctx, url)
		return err == nil && m["wfguard_reconcile_total"] >= float64(res.Workflows), nil
	}); err != nil {
		return fmt.Errorf("waiting for the controller to reconcile %d workflows (last: %v): %w", res.Workflows, m["wfguard_reconcile_total"], err)
	}
	res.LoadedHeapInuseBytes, res.LoadedRSSBytes = m["go_memstats_heap_inuse_bytes"], m["process_resident_memory_bytes"]
	if res.Workflows > 0 {
		res.HeapBytesPerWorkflow = (res.LoadedHeapInuseBytes - res.BaselineHeapInuseBytes) / float64(res.Workflows)
	}
	report.Memory = res
	return nil
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

// scrape reads a Prometheus text exposition and sums each metric over its label sets.
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
		if brace := strings.IndexByte(name, '{'); brace >= 0 {
			name = name[:brace]
		}
		v, err := strconv.ParseFloat(line[space+1:], 64)
		if err != nil {
			continue
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
