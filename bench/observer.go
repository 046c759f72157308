package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/podfinalizer"
)

// observer timestamps, from its own watches, when pods appear and succeed, results complete and
// workflows finish. Latencies are differences of these times, so the watch delivery delay mostly cancels.
type observer struct {
	namespace  string
	mu         sync.Mutex
	podAdded   map[string]time.Time     // node ID → pod first seen
	ready      map[string]chan struct{} // node ID → closed when its pod Succeeded and its result completed
	podDone    map[string]time.Time     // node ID → pod Succeeded seen
	resultOK   map[string]time.Time     // node ID → result completed seen
	nodeName   map[string]string        // node ID → node name
	podRunning map[string]bool          // node ID → pod seen Running
	// nodeRunning: node ID → its workflow's status seen showing it Running (the controller recorded it).
	nodeRunning map[string]bool
	holding     map[string]bool // node ID → its pod holds the status finalizer
	// progress is what a node's pod and result show short of completion; progressed is closed (and
	// replaced) when it changes. The pipeline-writes raw client writes it as wfguard does.
	progress   map[string]nodeProgress
	progressed map[string]chan struct{}
	wfDone     map[string]time.Time // workflow name → completed seen
	wfPhase    map[string]wfv1.WorkflowPhase
	// suspended and resumed: when spec.suspend was first seen set, and then first seen unset again.
	suspended, resumed map[string]time.Time
	changed            chan struct{}
	stop               context.CancelFunc
	wg                 sync.WaitGroup
}

// newObserver is an observer of ns with empty records and no watches yet.
func newObserver(ns string) *observer {
	return &observer{namespace: ns, podAdded: map[string]time.Time{}, podDone: map[string]time.Time{}, resultOK: map[string]time.Time{},
		nodeName: map[string]string{}, podRunning: map[string]bool{}, nodeRunning: map[string]bool{}, holding: map[string]bool{},
		progress: map[string]nodeProgress{}, progressed: map[string]chan struct{}{}, ready: map[string]chan struct{}{}, wfDone: map[string]time.Time{}, wfPhase: map[string]wfv1.WorkflowPhase{},
		suspended: map[string]time.Time{}, resumed: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

func startObserver(ctx context.Context, kube kubernetes.Interface, argo versioned.Interface, ns string) (*observer, error) {
	o := newObserver(ns)
	ctx, o.stop = context.WithCancel(ctx)
	pods := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().Pods(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return kube.CoreV1().Pods(ns).Watch(ctx, opts)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	results := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return argo.ArgoprojV1alpha1().WorkflowTaskResults(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return argo.ArgoprojV1alpha1().WorkflowTaskResults(ns).Watch(ctx, opts)
		},
	}, &wfv1.WorkflowTaskResult{}, 0, cache.Indexers{})
	workflows := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return argo.ArgoprojV1alpha1().Workflows(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return argo.ArgoprojV1alpha1().Workflows(ns).Watch(ctx, opts)
		},
	}, &wfv1.Workflow{}, 0, cache.Indexers{})
	handler := func(f func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }}
	}
	if _, err := pods.AddEventHandler(handler(o.onPod)); err != nil {
		return nil, err
	}
	if _, err := results.AddEventHandler(handler(o.onResult)); err != nil {
		return nil, err
	}
	if _, err := workflows.AddEventHandler(handler(o.onWorkflow)); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{pods, results, workflows} {
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			inf.RunWithContext(ctx)
		}()
	}
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, results.HasSynced, workflows.HasSynced) {
		o.close()
		return nil, fmt.Errorf("syncing the observer's caches in %s: %w", ns, ctx.Err())
	}
	return o, nil
}

func (o *observer) close() {
	o.stop()
	o.wg.Wait()
}

func (o *observer) notify() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

func (o *observer) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	id := pod.Annotations[common.AnnotationKeyNodeID]
	if id == "" {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.podAdded[id]; !seen {
		o.podAdded[id] = now
		o.nodeName[id] = pod.Annotations[common.AnnotationKeyNodeName]
		o.notify()
	}
	if slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
		o.holding[id] = true
	} else if o.holding[id] {
		delete(o.holding, id)
		o.notify()
	}
	p := o.progress[id]
	p.Host = pod.Spec.NodeName
	p.Running = p.Running || pod.Status.Phase == corev1.PodRunning
	o.setProgress(id, p)
	if pod.Status.Phase == corev1.PodRunning && !o.podRunning[id] {
		o.podRunning[id] = true
		o.notify()
	}
	if _, seen := o.podDone[id]; !seen && pod.Status.Phase == corev1.PodSucceeded {
		o.podDone[id] = now
		o.checkReady(id)
	}
}

func (o *observer) onResult(obj any) {
	r, ok := obj.(*wfv1.WorkflowTaskResult)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.Outputs != nil && r.Outputs.HasOutputs() {
		p := o.progress[r.Name]
		p.Outputs = true
		o.setProgress(r.Name, p)
	}
	if r.Labels[common.LabelKeyReportOutputsCompleted] != "true" {
		return
	}
	if _, seen := o.resultOK[r.Name]; !seen {
		o.resultOK[r.Name] = now
		o.checkReady(r.Name)
	}
}

// nodeProgress is what a running node's pod and result show that its workflow status may record before the
// node completes: the host, the pod running, outputs reported.
type nodeProgress struct {
	Host    string
	Running bool
	Outputs bool
}

// setProgress records a node's progress and wakes its waiters if it changed. Callers hold o.mu.
func (o *observer) setProgress(id string, p nodeProgress) {
	if o.progress[id] == p {
		return
	}
	o.progress[id] = p
	if ch, ok := o.progressed[id]; ok {
		close(ch)
		delete(o.progressed, id)
	}
}

// nodeProgress returns the node's progress and a channel closed when it next changes.
func (o *observer) nodeProgress(id string) (nodeProgress, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch, ok := o.progressed[id]
	if !ok {
		ch = make(chan struct{})
		o.progressed[id] = ch
	}
	return o.progress[id], ch
}

// readyChan is closed once the node's pod has Succeeded and its result is complete. Callers hold o.mu.
func (o *observer) readyChan(id string) chan struct{} {
	ch, ok := o.ready[id]
	if !ok {
		ch = make(chan struct{})
		o.ready[id] = ch
	}
	return ch
}

func (o *observer) checkReady(id string) {
	_, done := o.podDone[id]
	_, result := o.resultOK[id]
	if done && result {
		ch := o.readyChan(id)
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// nodeReady returns a channel closed once the node's pod has Succeeded and its result is complete.
func (o *observer) nodeReady(id string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.readyChan(id)
}

// waitNode waits until the node's pod has Succeeded and its result is complete.
func (o *observer) waitNode(ctx context.Context, id string) error {
	ch := o.nodeReady(id)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for node %s to succeed with its result: %w", id, ctx.Err())
	}
}

func (o *observer) onWorkflow(obj any) {
	wf, ok := obj.(*wfv1.Workflow)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	if _, seen := o.wfDone[wf.Name]; !seen && wf.Status.Phase.Completed() {
		o.wfDone[wf.Name] = now
		o.wfPhase[wf.Name] = wf.Status.Phase
	}
	for id, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeRunning && !o.nodeRunning[id] {
			o.nodeRunning[id] = true
		}
	}
	_, wasSuspended := o.suspended[wf.Name]
	switch isSuspended := wf.Spec.Suspend != nil && *wf.Spec.Suspend; {
	case isSuspended && !wasSuspended:
		o.suspended[wf.Name] = now
	case !isSuspended && wasSuspended:
		if _, seen := o.resumed[wf.Name]; !seen {
			o.resumed[wf.Name] = now
		}
	}
	o.mu.Unlock()
	o.notify()
}

// lastCompleted is when the last of the named workflows was seen completed (zero if none was).
func (o *observer) lastCompleted(names []string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, n := range names {
		last = later(last, o.wfDone[n])
	}
	return last
}

// completedSince is, for each named workflow seen completed, how long after begin it was seen so.
func (o *observer) completedSince(begin time.Time, names []string) map[string]time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]time.Duration{}
	for _, n := range names {
		if done, ok := o.wfDone[n]; ok {
			out[n] = done.Sub(begin)
		}
	}
	return out
}

// waitWorkflows waits until every named workflow has completed.
func (o *observer) waitWorkflows(ctx context.Context, names []string) error {
	for {
		o.mu.Lock()
		missing := 0
		for _, n := range names {
			if _, ok := o.wfDone[n]; !ok {
				missing++
			}
		}
		o.mu.Unlock()
		if missing == 0 {
			return nil
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d of %d workflows to complete: %w", missing, len(names), ctx.Err())
		}
	}
}

// waitRunning waits until at least n workflow pods have been seen Running.
func (o *observer) waitRunning(ctx context.Context, n int) error {
	return o.waitCount(ctx, n, "running pods", func() int { return len(o.podRunning) })
}

// waitRecordedRunning waits until at least n pod nodes have been seen Running in their workflows' status:
// the controller has recorded its pods starting.
func (o *observer) waitRecordedRunning(ctx context.Context, n int) error {
	return o.waitCount(ctx, n, "pod nodes recorded Running", func() int { return len(o.nodeRunning) })
}

// waitCount waits until count, read under the observer's lock, reaches n.
func (o *observer) waitCount(ctx context.Context, n int, what string, count func() int) error {
	for {
		o.mu.Lock()
		have := count()
		o.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d %s (have %d): %w", n, what, have, ctx.Err())
		}
	}
}

// waitReleased waits until no pod holds the status finalizer, so the run's API calls are all counted.
func (o *observer) waitReleased(ctx context.Context) error {
	if held := o.heldOnceReleasedOr(ctx); held > 0 {
		return fmt.Errorf("waiting for %d pods to lose the status finalizer: %w", held, ctx.Err())
	}
	return nil
}

// held is how many pods hold the status finalizer now.
func (o *observer) held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.holding)
}

// heldOnceReleasedOr waits until no pod holds the status finalizer or ctx ends, and returns how many
// still hold it.
func (o *observer) heldOnceReleasedOr(ctx context.Context) int {
	for {
		held := o.held()
		if held == 0 {
			return 0
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			return held
		}
	}
}

// unfinished counts the named workflows not seen completed.
func (o *observer) unfinished(names []string) int {
	return o.phases(names)[""]
}

// phases counts the final phases of the named workflows ("": not completed).
func (o *observer) phases(names []string) map[wfv1.WorkflowPhase]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[wfv1.WorkflowPhase]int{}
	for _, n := range names {
		out[o.wfPhase[n]]++
	}
	return out
}

// schedulingLatencies returns, for each pod of a node whose predecessor (by node name) is known, the time
// from "predecessor's pod Succeeded and its result complete" to the successor's pod appearing.
func (o *observer) schedulingLatencies(predecessor func(nodeName string) (string, bool)) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	byName := map[string]string{}
	for id, name := range o.nodeName {
		byName[name] = id
	}
	var out []time.Duration
	for id, added := range o.podAdded {
		pred, ok := predecessor(o.nodeName[id])
		if !ok {
			continue
		}
		pid, ok := byName[pred]
		if !ok {
			continue
		}
		done, ok1 := o.podDone[pid]
		result, ok2 := o.resultOK[pid]
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, added.Sub(later(done, result)))
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitSuspendState waits until each named workflow has been seen suspended (resumed false) or suspended
// and then resumed (resumed true), and returns when, by name.
func (o *observer) waitSuspendState(ctx context.Context, names []string, resumed bool) (map[string]time.Time, error) {
	for {
		o.mu.Lock()
		seen := o.suspended
		if resumed {
			seen = o.resumed
		}
		out := map[string]time.Time{}
		for _, n := range names {
			if at, ok := seen[n]; ok {
				out[n] = at
			}
		}
		o.mu.Unlock()
		if len(out) == len(names) {
			return out, nil
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d of %d workflows to be seen %s: %w", len(names)-len(out), len(names),
				map[bool]string{false: "suspended", true: "resumed"}[resumed], ctx.Err())
		}
	}
}
