package engine

import (
	"context"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// workflowHooksDone runs the workflow's hooks other than exit (spec.hooks), as argo does after each pass
// over the entrypoint: a hook whose expression holds, with {{workflow.status}} what the entrypoint node
// makes of the workflow now (Running while it runs), starts once as node WF.hooks.NAME, a child of the
// entrypoint node. It reports whether every hook started is fulfilled: the workflow, and its exit
// handler, wait for them. A hook that cannot run errors the entrypoint node with why, as under argo; only
// a transient API error is returned.
func (e *Engine) workflowHooksDone(ctx context.Context, p *Pass, root *wfv1.NodeStatus) (bool, error) {
	names := lifecycleHookNames(p.WF.Spec.Hooks)
	if root == nil || len(names) == 0 {
		return true, nil
	}
	p.extraGlobals = statusGlobals(p, root)
	defer func() { p.extraGlobals = nil }()
	done := true
	for _, name := range names {
		hookDone, err := e.runWorkflowHook(ctx, p, name, root)
		if err != nil {
			if abortsPass(err) {
				return false, err
			}
			p.markPhase(p.node(root.Name), wfv1.NodeError, err.Error())
			return true, nil
		}
		done = done && hookDone
	}
	return done, nil
}

// runWorkflowHook starts (or drives on) one workflow-level hook when due; it reports whether the hook is
// done: it does not run, or its node is fulfilled.
func (e *Engine) runWorkflowHook(ctx context.Context, p *Pass, name wfv1.LifecycleEvent, root *wfv1.NodeStatus) (bool, error) {
	hook := p.WF.Spec.Hooks[name]
	nodeName := p.WF.Name + ".hooks." + string(name)
	call := hookCall{hook: &hook, name: nodeName, display: nodeName}
	run, err := hookDue(p, call, p.globals())
	if err != nil || !run {
		return !run, err
	}
	n, err := e.executeTemplate(ctx, &nodeCall{p: p, name: call.name, display: call.display, call: templateCall{name: hook.Template, ref: hook.TemplateRef}, args: hook.Arguments, opts: execOpts{flag: &wfv1.NodeFlag{Hooked: true}}})
	if n != nil {
		p.addChild(p.node(root.Name), n.ID)
	}
	if err = recordedOnNode(err); err != nil {
		return false, err
	}
	return n != nil && p.nodeFulfilled(nodeName), nil // nil: held back (parallelism)
}
