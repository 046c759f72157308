package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// ActionsResult is WorkflowAction latency, create → terminal phase, with all actions of a kind at once.
type ActionsResult struct {
	Concurrent int       `json:"concurrent"`
	Suspend    Latencies `json:"suspend"`
	Resume     Latencies `json:"resume"`
	All        Latencies `json:"all"`
	Failed     int       `json:"failed"`
}

func (e *env) actions(ctx context.Context, report *Report) error {
	ns, err := e.namespace(ctx, "bench-actions")
	if err != nil {
		return err
	}
	obs, err := startObserver(ctx, e.kube, e.argo, ns)
	if err != nil {
		return err
	}
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
	r, err := e.start(ctx, runOptions{ns: ns, script: script})
	if err != nil {
		return err
	}
	defer func() { _ = r.stop() }()
	client, err := v1alpha1.NewForConfig(e.config)
	if err != nil {
		return err
	}
	actionsNS := client.Namespace(ns)
	terminal, stopWatch, err := watchTerminal(ctx, actionsNS)
	if err != nil {
		return err
	}
	defer stopWatch()

	n := e.opts.Actions
	var wfs []*wfv1.Workflow
	for i := range n {
		wfs = append(wfs, chainWorkflow(fmt.Sprintf("held-%03d", i), 1))
	}
	if err := createAll(ctx, e.argo, ns, wfs); err != nil {
		return err
	}
	podsCtx, cancelPods := context.WithTimeout(ctx, 2*time.Minute)
	err = obs.waitRunning(podsCtx, n)
	cancelPods()
	if err != nil {
		return err
	}
	res := &ActionsResult{Concurrent: n}
	var all []time.Duration
	for _, kind := range []string{v1alpha1.ActionSuspend, v1alpha1.ActionResume} {
		sample, failed, err := burst(ctx, actionsNS, terminal, wfs, kind)
		if err != nil {
			return err
		}
		res.Failed += failed
		all = append(all, sample...)
		if kind == v1alpha1.ActionSuspend {
			res.Suspend = summarize(sample)
		} else {
			res.Resume = summarize(sample)
		}
	}
	res.All = summarize(all)
	close(hold)
	released = true
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := obs.waitWorkflows(waitCtx, names(wfs)); err != nil {
		return err
	}
	if err := allSucceeded(obs, names(wfs)); err != nil {
		return err
	}
	report.Actions = res
	return nil
}

// burst creates one action of kind per workflow, all at once, and measures each create → terminal.
func burst(ctx context.Context, client *v1alpha1.NamespacedClient, terminal *terminalTimes, wfs []*wfv1.Workflow, kind string) ([]time.Duration, int, error) {
	type sent struct {
		name  string
		start time.Time
	}
	out := make([]sent, len(wfs))
	var wg sync.WaitGroup
	errs := make([]error, len(wfs))
	for i, wf := range wfs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			a, err := client.Create(ctx, &v1alpha1.WorkflowAction{
				ObjectMeta: metav1.ObjectMeta{GenerateName: wf.Name + "-"},
				Spec:       v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: wf.Name}, Action: kind},
			}, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("creating %s action for %s: %w", kind, wf.Name, err)
				return
			}
			out[i] = sent{name: a.Name, start: start}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	var sample []time.Duration
	failed := 0
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, s := range out {
		at, phase, err := terminal.wait(waitCtx, s.name)
		if err != nil {
			if a, gerr := client.Get(ctx, s.name, metav1.GetOptions{}); gerr == nil {
				return nil, 0, fmt.Errorf("%w (on the server: status %+v, resourceVersion %s, managed by %v)", err, a.Status, a.ResourceVersion, managers(a))
			}
			return nil, 0, err
		}
		if phase != v1alpha1.PhaseSucceeded {
			failed++
		}
		sample = append(sample, at.Sub(s.start))
	}
	return sample, failed, nil
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
