package engine

import (
	"context"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/util/template"
)

// exitHookDone runs the exit handler of a step or task (its onExit, or hooks.exit) once the node is
// fulfilled, as node NAME.onExit under the same boundary, a child of the node. It reports whether the node
// is done with its hook: it has none, it does not run (the node was skipped, the hook's expression is
// false, or the workflow is terminated before it started), or the hook's node is fulfilled. Successors of
// the node wait for this, as argo's do. prefix is how the caller's scope names the node ("steps.NAME"),
// for {{steps.NAME.status}} and {{steps.NAME.outputs.parameters.P}} in the hook's arguments.
func (e *Engine) exitHookDone(ctx context.Context, p *Pass, hook *wfv1.LifecycleHook, parent *wfv1.NodeStatus, boundaryID, prefix string,
	sc scope) (bool, error) {
	if hook == nil {
		return true, nil
	}
	if !fulfilled(parent) {
		return false, nil
	}
	if !parent.Phase.Completed() {
		return true, nil // skipped or omitted: argo runs no exit handler
	}
	name := parent.Name + ".onExit"
	local := scope{}
	for k, v := range sc {
		local[k] = v
	}
	local.addNode(prefix, parent)
	params := mergeParams(p.globals(), local)
	if p.node(name) == nil {
		if !shutdown(p).ShouldExecute(true) {
			return true, nil // terminated: exit handlers do not start
		}
		if hook.Expression != "" {
			run, err := argoexpr.EvalBool(hook.Expression, env.GetFuncMap(template.EnvMap(params)))
			if err != nil {
				return true, e.errorHook(p, name, parent, boundaryID, hook, "hooks.exit.expression: "+err.Error())
			}
			if !run {
				return true, nil
			}
		}
	}
	args, err := resolveJSON(&hook.Arguments, params)
	if err == nil {
		// The hook's argument artifacts may name the node's own output artifacts ({{steps.NAME.outputs.artifacts.A}}).
		args.Artifacts, err = artifactResolver{p: p, sc: local}.arguments(args.Artifacts)
	}
	if err != nil {
		return true, e.errorHook(p, name, parent, boundaryID, hook, err.Error())
	}
	// Everything the handler runs is part of an exit handler: its pods run on Stop and past the deadline.
	exiting := p.exiting
	p.exiting = true
	defer func() { p.exiting = exiting }()
	n, err := e.executeTemplate(ctx, p, name, parent.DisplayName+".onExit", templateCall{name: hook.Template, ref: hook.TemplateRef}, *args, boundaryID, "",
		execOpts{onExit: true, flag: &wfv1.NodeFlag{Hooked: true}})
	if n != nil {
		p.addChild(p.node(parent.Name), n.ID)
	}
	if err = recordedOnNode(err); err != nil {
		return false, err
	}
	return n != nil && fulfilled(p.node(name)), nil
}

// errorHook records an exit handler that cannot run as an errored node, so the failure is visible and the
// node's successors are not held forever.
func (e *Engine) errorHook(p *Pass, name string, parent *wfv1.NodeStatus, boundaryID string, hook *wfv1.LifecycleHook, msg string) error {
	n := e.errorNode(p, name, parent.DisplayName+".onExit", templateCall{name: hook.Template, ref: hook.TemplateRef}.templateName(), boundaryID, msg)
	hooked := true
	n.NodeFlag = &wfv1.NodeFlag{Hooked: hooked}
	p.setNode(n)
	p.addChild(p.node(parent.Name), n.ID)
	return nil
}

// stepExitHook is a step's exit handler (onExit or hooks.exit), with the workflow's arguments when the
// hook names none, as argo does.
func stepExitHook(p *Pass, s *wfv1.WorkflowStep) *wfv1.LifecycleHook {
	return s.GetExitHook(p.WF.Spec.Arguments)
}

// taskExitHook is a DAG task's exit handler (onExit or hooks.exit).
func taskExitHook(p *Pass, t *wfv1.DAGTask) *wfv1.LifecycleHook {
	return t.GetExitHook(p.WF.Spec.Arguments)
}
