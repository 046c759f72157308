package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// MemoryResult is the controller process's memory with its caches full of workflows, and their finished
// pods in the namespace.
type MemoryResult struct {
	Workflows int `json:"workflows"`
	// Pods are the workflows' finished pods (PodsPerWorkflow each): Succeeded, released and labelled
	// completed, the state both controllers leave a pod in, so neither should cache them.
	Pods            int `json:"pods"`
	PodsPerWorkflow int `json:"podsPerWorkflow"`
	// CreateSeconds is how long the bench took to create the workflows and pods (and set the pods' status).
	CreateSeconds float64 `json:"createSeconds"`
	// Baseline is after a one-pod warm-up in an otherwise empty namespace; Loaded with every workflow
	// cached (wfguard: reconciled once) and the RSS settled. Heap is go_memstats_heap_inuse_bytes from the
	// controller's /metrics (0 when it serves none); RSS is VmRSS from /proc/<pid>/status.
	BaselineHeapInuseBytes float64 `json:"baselineHeapInuseBytes"`
	BaselineRSSBytes       float64 `json:"baselineRSSBytes"`
	LoadedHeapInuseBytes   float64 `json:"loadedHeapInuseBytes"`
	LoadedRSSBytes         float64 `json:"loadedRSSBytes"`
	// HeapBytesPerWorkflow is (loaded - baseline heap) / workflows; RSSBytesPerWorkflow likewise.
	HeapBytesPerWorkflow float64 `json:"heapBytesPerWorkflow"`
	RSSBytesPerWorkflow  float64 `json:"rssBytesPerWorkflow"`
	// PodsCached is the controller's own count of pods in its cache when loaded (wfguard_pods_cached; nil
	// for a controller that exports none).
	PodsCached *float64 `json:"podsCached,omitempty"`
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
	obs, err := e.observedNamespace(ctx, "bench-memory-"+c)
	if err != nil {
		return nil, err
	}
	ns := obs.namespace
	defer obs.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return nil, err
	}
	stopNode := sync.OnceFunc(node.Stop)
	defer stopNode()
	p, err := e.startController(ctx, c, ns, processOptions{metrics: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop() }()
	if err := e.warmUp(ctx, p, obs); err != nil {
		return nil, err
	}
	// The node would run the finished pods created below (they are created Pending), and the observer
	// would hold them all in the bench process: neither is needed after the warm-up.
	stopNode()
	obs.close()
	perWorkflow := max(e.opts.MemoryPodsPerWorkflow, 0)
	res := &MemoryResult{Workflows: e.opts.MemoryWorkflows, PodsPerWorkflow: perWorkflow, Pods: e.opts.MemoryWorkflows * perWorkflow}
	if res.BaselineHeapInuseBytes, res.BaselineRSSBytes, err = e.settledMemory(ctx, p); err != nil {
		return nil, err
	}
	begin := time.Now()
	if err := e.createCompleted(ctx, ns, res.Workflows, perWorkflow); err != nil {
		return nil, err
	}
	res.CreateSeconds = time.Since(begin).Seconds()
	e.opts.progressf("bench:     created %d completed workflows and %d pods in %.1f s", res.Workflows, res.Pods, res.CreateSeconds)
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
	if res.Workflows > 0 {
		res.RSSBytesPerWorkflow = (res.LoadedRSSBytes - res.BaselineRSSBytes) / float64(res.Workflows)
	}
	if res.PodsCached, err = p.podsCachedOnceDrained(ctx); err != nil {
		return nil, err
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
	heap, err = p.heapInuse(ctx)
	return heap, last[len(last)-1], err
}

// currentMemory is p's heap in use and RSS now, of a process whose memory is not expected to settle.
func currentMemory(ctx context.Context, p *process) (heap, rss float64, err error) {
	if rss, err = p.rss(); err != nil {
		return 0, 0, p.failed(fmt.Errorf("reading the RSS: %w", err))
	}
	heap, err = p.heapInuse(ctx)
	return heap, rss, err
}

// heapInuse is go_memstats_heap_inuse_bytes from p's /metrics (0 where it serves none).
func (p *process) heapInuse(ctx context.Context) (float64, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, p.failed(fmt.Errorf("scraping %s: %w", p.metricsURL, err))
	}
	return m["go_memstats_heap_inuse_bytes"], nil
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

// createCompleted stores k finished workflows, the shape a busy namespace keeps for days: each a chain of
// max(3, podsPer) Succeeded nodes, with one finished pod for each of its first podsPer nodes.
func (e *env) createCompleted(ctx context.Context, ns string, k, podsPer int) error {
	// Seeding is not what is measured: a client of its own, not throttled below what the API server takes.
	config := rest.CopyConfig(e.config)
	config.QPS, config.Burst = 5000, 10000
	kube := kubernetes.NewForConfigOrDie(config)
	argo := versioned.NewForConfigOrDie(config)
	started := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	finished := metav1.NewTime(time.Now().Truncate(time.Second))
	nodes := max(3, podsPer)
	return inParallel(32, k, func(i int) error {
		wf := chainWorkflow(fmt.Sprintf("done-%05d", i), nodes)
		wf.Labels = map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}
		wf.Status = wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: started, FinishedAt: finished, Nodes: wfv1.Nodes{}}
		for j := range nodes {
			id := fmt.Sprintf("%s-%d", wf.Name, j)
			wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: fmt.Sprintf("%s.t%d", wf.Name, j), DisplayName: fmt.Sprintf("t%d", j),
				Type: wfv1.NodeTypePod, TemplateName: "step", Phase: wfv1.NodeSucceeded, StartedAt: started, FinishedAt: finished,
				Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: workload.OutputParameter, Value: wfv1.AnyStringPtr("ok")}}}}
		}
		created, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(ctx, wf, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating completed workflow %s: %w", wf.Name, err)
		}
		for j := range podsPer {
			if err := createFinishedPod(ctx, kube, created, wf.Status.Nodes[fmt.Sprintf("%s-%d", wf.Name, j)], started, finished); err != nil {
				return err
			}
		}
		return nil
	})
}

// createFinishedPod creates node's pod as a controller leaves it once done: owned by its workflow, without
// the status finalizer, labelled completed, its status (set through the status subresource, since a create
// resets it) Succeeded with every container terminated with exit code 0.
func createFinishedPod(ctx context.Context, kube kubernetes.Interface, wf *wfv1.Workflow, n wfv1.NodeStatus, started, finished metav1.Time) error {
	tmpl := workload.StepTemplate()
	tmpl.Inputs.Parameters[0].Value = wfv1.AnyStringPtr("ok")
	pod, err := podspec.Build(podspec.Input{Workflow: wf, NodeName: n.Name, NodeID: n.ID, Template: &tmpl, Now: started.Time})
	if err != nil {
		return fmt.Errorf("building the finished pod of %s: %w", n.Name, err)
	}
	pod.Labels[common.LabelKeyCompleted] = "true"
	pod.Spec.NodeName = simnode.DefaultNodeName
	pods := kube.CoreV1().Pods(wf.Namespace)
	if pod, err = pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the finished pod of %s: %w", n.Name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: &started, HostIP: "10.0.0.1", PodIP: "10.1.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: finished}}}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		status := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "containerd://" + string(pod.UID) + "-" + c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: started, FinishedAt: finished}}}
		if slices.ContainsFunc(pod.Spec.InitContainers, func(ic corev1.Container) bool { return ic.Name == c.Name }) {
			pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, status)
		} else {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status)
		}
	}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the finished pod of %s Succeeded: %w", n.Name, err)
	}
	return nil
}

// scrape reads a Prometheus text exposition from url (parseMetrics).
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
	return parseMetrics(resp.Body)
}

// parseMetrics reads a Prometheus text exposition: each metric summed over its label sets by name, and
// each labelled series by name{label=value,...}, without quotes.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
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

// podsCachedNote is ", N pods cached" for a controller that says how many pods it caches, else "".
func podsCachedNote(cached *float64) string {
	if cached == nil {
		return ""
	}
	return fmt.Sprintf(", %.0f pods cached", *cached)
}
