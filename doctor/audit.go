package doctor

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/taskresult"
)

// Options scope and tune an audit. Zero durations give the defaults.
type Options struct {
	// Namespace to audit; "" audits all namespaces.
	Namespace string
	Now       time.Time
	// MinAge is how old a transient state must be to count: a result not finalized after its pod
	// ended, a finalizer still held after its node is final or its workflow is gone (default 1m).
	MinAge time.Duration
	// ActionPendingAfter flags WorkflowActions still Pending after this long (default 5m).
	ActionPendingAfter time.Duration
	// UnreconciledAfter flags workflows that needed a reaction this long ago and got none (default 10m).
	UnreconciledAfter time.Duration
	// TaskResultTimeout is the controller's --task-result-timeout (default 2m).
	TaskResultTimeout time.Duration
}

// Defaults.
const (
	DefaultMinAge             = time.Minute
	DefaultActionPendingAfter = 5 * time.Minute
	DefaultUnreconciledAfter  = 10 * time.Minute
)

func (o *Options) defaults() {
	if o.MinAge <= 0 {
		o.MinAge = DefaultMinAge
	}
	if o.ActionPendingAfter <= 0 {
		o.ActionPendingAfter = DefaultActionPendingAfter
	}
	if o.UnreconciledAfter <= 0 {
		o.UnreconciledAfter = DefaultUnreconciledAfter
	}
	if o.TaskResultTimeout <= 0 {
		o.TaskResultTimeout = taskresult.DefaultTimeout
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
}

// cluster is everything the checks read, each list read once; a nil error means the list is complete.
type cluster struct {
	// unreachable is set when the API server did not answer at all; every check is then skipped.
	unreachable error

	pods       []*corev1.Pod
	podsErr    error
	results    []*wfv1.WorkflowTaskResult
	resultsErr error
	workflows  []inspect.Workflow
	// undecodable workflows are reported by the checks that need workflows.
	undecodable  []inspect.Undecodable
	workflowsErr error
	actions      []*actionsv1.WorkflowAction
	actionsErr   error
}

// read lists everything once. Pods are listed before workflows: a pod's workflow exists before the
// pod, so a workflow missing from the later list is really gone (no pod is taken for an orphan because
// its new workflow was created between two lists).
func read(ctx context.Context, c *inspect.Clients, ns string) *cluster {
	in := &cluster{}
	if _, err := c.Kube.Discovery().ServerVersion(); err != nil {
		in.unreachable = fmt.Errorf("cannot reach the API server %s: %s", c.Host, inspect.Reason(err))
		return in
	}
	in.pods, in.podsErr = inspect.ListPods(ctx, c, ns, "")
	in.results, in.resultsErr = inspect.ListResults(ctx, c, ns, "")
	in.workflows, in.undecodable, in.workflowsErr = inspect.ListWorkflows(ctx, c, ns)
	in.actions, in.actionsErr = inspect.ListActions(ctx, c, ns, "")
	return in
}

// Audit runs every check. It changes nothing. A check whose reads fail says so in its Skipped lines;
// the other checks still run.
func Audit(ctx context.Context, c *inspect.Clients, opts Options) Report {
	opts.defaults()
	in := read(ctx, c, opts.Namespace)
	r := Report{Namespace: opts.Namespace, Now: opts.Now}
	checks := []struct {
		name string
		run  func(context.Context, *inspect.Clients, *cluster, Options) CheckResult
	}{
		{CheckPartialSuccess, partialSuccess},
		{CheckIncompleteResult, incompleteResults},
		{CheckFinalizerHeld, heldFinalizers},
		{CheckStaleAction, staleActions},
		{CheckNotReconciled, notReconciled},
		{CheckExecutorRBAC, executorRBAC},
		{CheckWorkflowCRD, workflowCRD},
	}
	for _, check := range checks {
		var res CheckResult
		if in.unreachable != nil {
			res = CheckResult{Skipped: []string{in.unreachable.Error()}}
		} else {
			res = check.run(ctx, c, in, opts)
		}
		res.Name = check.name
		if res.Findings == nil {
			res.Findings = []Finding{}
		}
		r.Checks = append(r.Checks, res)
	}
	return r
}

// need returns the skipped lines for failed reads; the check cannot run when any is non-empty.
func need(errs ...error) []string {
	var out []string
	for _, err := range errs {
		if err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

func undecodable(in *cluster) []string {
	var out []string
	for _, u := range in.undecodable {
		out = append(out, fmt.Sprintf("workflow %s/%s not checked: %v", u.Namespace, u.Name, u.Err))
	}
	return out
}
