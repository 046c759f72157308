package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// ActionsResult is suspend and resume latency with all requests of a kind at once, measured to two points:
// Returned, when the client's call returns (wfguard: the WorkflowAction reached a terminal phase, where
// `wfguard action` returns; argo: argo's CLI code, workflow/util's SuspendWorkflow or ResumeWorkflow in
// bin/argo-client, exited), and Visible, when the bench's watch sees spec.suspend change in the workflow.
type ActionsResult struct {
	Concurrent int `json:"concurrent"`
	// How says what the client does and when it returns.
	How            string    `json:"how"`
	Suspend        Latencies `json:"suspend"`
	Resume         Latencies `json:"resume"`
	All            Latencies `json:"all"`
	SuspendVisible Latencies `json:"suspendVisible"`
	ResumeVisible  Latencies `json:"resumeVisible"`
	AllVisible     Latencies `json:"allVisible"`
	Failed         int       `json:"failed"`
}

const (
	howWFGuard = "WorkflowAction create → terminal phase"
	howArgo    = "argo's CLI code (workflow/util) → process exit"
)

func (e *env) actions(ctx context.Context, report *Report) error {
	report.Actions = map[string]*ActionsResult{}
	err := e.eachController(func(c string) error {
		res, err := e.actionsOf(ctx, c)
		if err != nil {
			return err
		}
		report.Actions[c] = res
		return nil
	})
	if err != nil {
		return err
	}
	e.opts.progressf("actions: the raw client's floor")
	report.RawActions, err = e.actionsRaw(ctx)
	return err
}

// requester sends one suspend or resume for a workflow and returns once the client would.
type requester func(ctx context.Context, workflow, kind string) (failed bool, err error)

func (e *env) actionsOf(ctx context.Context, c string) (*ActionsResult, error) {
	obs, err := e.observedNamespace(ctx, "bench-actions-"+c)
	if err != nil {
		return nil, err
	}
	ns := obs.namespace
	defer obs.close()
	hold := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(hold)
		}
	}()
	script := stepScript()
	script.Default.Hold = hold
	node, err := e.startNode(ctx, ns, script)
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	p, err := e.startController(ctx, c, ns, processOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop() }()
	// The warm-up pod is held too, so it finishes at the end with the others.
	warm := chainWorkflow("warmup", 1)
	if err := createAll(ctx, e.argo, ns, []*wfv1.Workflow{warm}); err != nil {
		return nil, err
	}

	res := &ActionsResult{Concurrent: e.opts.Actions}
	var send requester
	switch c {
	case ControllerWFGuard:
		res.How = howWFGuard
		client, err := v1alpha1.NewForConfig(e.config)
		if err != nil {
			return nil, err
		}
		terminal, stopWatch, err := watchTerminal(ctx, client.Namespace(ns))
		if err != nil {
			return nil, err
		}
		defer stopWatch()
		send = wfguardRequester(client.Namespace(ns), terminal)
	case ControllerArgo:
		res.How = howArgo
		send = e.argoRequester(ns)
	}

	n := e.opts.Actions
	var wfs []*wfv1.Workflow
	for i := range n {
		wfs = append(wfs, chainWorkflow(fmt.Sprintf("held-%03d", i), 1))
	}
	if err := createAll(ctx, e.argo, ns, wfs); err != nil {
		return nil, err
	}
	podsCtx, cancelPods := context.WithTimeout(ctx, 2*time.Minute)
	err = obs.waitRunning(podsCtx, n+1) // with the warm-up's
	if err == nil {
		// The bursts start once the controller has recorded those pods Running, so they measure actions
		// alone and not beside the writes that record the workload starting (wfguard defers those by up to
		// its coalescing window, argo by its requeue).
		err = obs.waitRecordedRunning(podsCtx, n+1)
	}
	cancelPods()
	if err != nil {
		return nil, p.failed(err)
	}
	metricsAt := func(when string) error {
		return p.saveMetrics(ctx, e.profiling(), filepath.Join(e.tmp, ns+"-"+c+"-actions-metrics-"+when+".txt"))
	}
	if err := metricsAt("before"); err != nil {
		return nil, p.failed(err)
	}
	if err := res.measureBursts(ctx, obs, send, wfs); err != nil {
		return nil, p.failed(err)
	}
	if err := metricsAt("after"); err != nil {
		return nil, p.failed(err)
	}
	close(hold)
	released = true
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := obs.waitWorkflows(waitCtx, append(names(wfs), warm.Name)); err != nil {
		return nil, p.failed(err)
	}
	if err := allSucceeded(obs, names(wfs)); err != nil {
		return nil, err
	}
	return res, nil
}

// measureBursts sends a burst of suspends, then one of resumes, one request per workflow, into res.
func (res *ActionsResult) measureBursts(ctx context.Context, obs *observer, send requester, wfs []*wfv1.Workflow) error {
	var all, allVisible []time.Duration
	for _, kind := range []string{v1alpha1.ActionSuspend, v1alpha1.ActionResume} {
		returned, visible, failed, err := burst(ctx, obs, send, wfs, kind)
		if err != nil {
			return fmt.Errorf("%s burst: %w", kind, err)
		}
		res.Failed += failed
		all, allVisible = append(all, returned...), append(allVisible, visible...)
		if kind == v1alpha1.ActionSuspend {
			res.Suspend, res.SuspendVisible = summarize(returned), summarize(visible)
		} else {
			res.Resume, res.ResumeVisible = summarize(returned), summarize(visible)
		}
	}
	res.All, res.AllVisible = summarize(all), summarize(allVisible)
	return nil
}

// burst sends one request of kind per workflow, all at once, and measures each to the client's return and
// to the change seen in the workflow.
func burst(ctx context.Context, obs *observer, send requester, wfs []*wfv1.Workflow, kind string) (returned, visible []time.Duration, failed int, err error) {
	starts := make([]time.Time, len(wfs))
	returned = make([]time.Duration, len(wfs))
	failures := make([]bool, len(wfs))
	errs := make([]error, len(wfs))
	var wg sync.WaitGroup
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i, wf := range wfs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			starts[i] = time.Now()
			failures[i], errs[i] = send(waitCtx, wf.Name, kind)
			returned[i] = time.Since(starts[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, 0, err
	}
	for _, f := range failures {
		if f {
			failed++
		}
	}
	// A failed request changes nothing to wait for.
	var changed []string
	for i, wf := range wfs {
		if !failures[i] {
			changed = append(changed, wf.Name)
		}
	}
	seen, err := obs.waitSuspendState(waitCtx, changed, kind == v1alpha1.ActionResume)
	if err != nil {
		return nil, nil, 0, err
	}
	for i, wf := range wfs {
		if at, ok := seen[wf.Name]; ok {
			visible = append(visible, at.Sub(starts[i]))
		}
	}
	return returned, visible, failed, nil
}

// wfguardRequester creates a WorkflowAction and returns when it reaches a terminal phase.
func wfguardRequester(client *v1alpha1.NamespacedClient, terminal *terminalTimes) requester {
	return func(ctx context.Context, workflow, kind string) (bool, error) {
		a, err := client.Create(ctx, &v1alpha1.WorkflowAction{
			ObjectMeta: metav1.ObjectMeta{GenerateName: workflow + "-"},
			Spec:       v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: workflow}, Action: kind},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("creating %s action for %s: %w", kind, workflow, err)
		}
		_, phase, err := terminal.wait(ctx, a.Name)
		if err != nil {
			if got, gerr := client.Get(context.WithoutCancel(ctx), a.Name, metav1.GetOptions{}); gerr == nil {
				return false, fmt.Errorf("%w (on the server: status %+v, resourceVersion %s, managed by %v)", err, got.Status, got.ResourceVersion, managers(got))
			}
			return false, err
		}
		return phase != v1alpha1.PhaseSucceeded, nil
	}
}

// argoRequester runs argo's own CLI code (bin/argo-client) as a user would run `argo suspend|resume`.
func (e *env) argoRequester(ns string) requester {
	bin := filepath.Join(e.root, "bin", "argo-client")
	return func(ctx context.Context, workflow, kind string) (bool, error) {
		op := map[string]string{v1alpha1.ActionSuspend: "suspend", v1alpha1.ActionResume: "resume"}[kind]
		out, err := exec.CommandContext(ctx, bin, "--kubeconfig", e.cp.Kubeconfig, "-n", ns, op, workflow).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return true, nil // argo's client refused or failed: a failed request, as a user would see it
		}
		if err != nil {
			return false, fmt.Errorf("running %s %s %s: %w\n%s", bin, op, workflow, err, out)
		}
		return false, nil
	}
}

// terminalTimes records when each action was first seen in a terminal phase.
type terminalTimes struct {
	mu      sync.Mutex
	at      map[string]time.Time
	phase   map[string]v1alpha1.ActionPhase
	changed chan struct{}
}

func watchTerminal(ctx context.Context, client *v1alpha1.NamespacedClient) (*terminalTimes, func(), error) {
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing workflow actions: %w", err)
	}
	// A retry watcher resumes after the server ends a watch, so no terminal phase is missed.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return client.Watch(ctx, o) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watching workflow actions: %w", err)
	}
	t := &terminalTimes{at: map[string]time.Time{}, phase: map[string]v1alpha1.ActionPhase{}, changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			a, ok := ev.Object.(*v1alpha1.WorkflowAction)
			if !ok || ev.Type == watch.Deleted || !a.Status.Terminal() {
				continue
			}
			now := time.Now()
			t.mu.Lock()
			if _, seen := t.at[a.Name]; !seen {
				t.at[a.Name], t.phase[a.Name] = now, a.Status.Phase
				close(t.changed)
				t.changed = make(chan struct{})
			}
			t.mu.Unlock()
		}
	}()
	return t, func() { w.Stop(); <-done }, nil
}

func (t *terminalTimes) wait(ctx context.Context, name string) (time.Time, v1alpha1.ActionPhase, error) {
	for {
		t.mu.Lock()
		at, ok := t.at[name]
		phase, changed := t.phase[name], t.changed
		t.mu.Unlock()
		if ok {
			return at, phase, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Time{}, "", fmt.Errorf("waiting for action %s to finish: %w", name, ctx.Err())
		}
	}
}

func managers(a *v1alpha1.WorkflowAction) []string {
	var out []string
	for _, m := range a.ManagedFields {
		out = append(out, m.Manager+"/"+string(m.Operation)+"/"+m.Subresource)
	}
	return out
}
