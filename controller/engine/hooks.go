package engine

import (
	"context"
	"fmt"
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/util/template"
)

// hookSite is the node hooks run on: their nodes are its children under its boundary, and the caller's
// scope sc names it prefix ("steps.NAME", "tasks.NAME") in the hooks' expressions and arguments.
type hookSite struct {
	parent     *wfv1.NodeStatus
	boundaryID string
	prefix     string
	sc         scope
}

// hookCall is one hook to run on the node of a step or task: its exit handler or a lifecycle hook.
type hookCall struct {
	hook          *wfv1.LifecycleHook
	name, display string // the hook's node
	// exit: an exit handler, whose pods run on Stop and past the deadline.
	exit bool
}

// exitHookDone runs the exit handler of a step or task (its onExit, or hooks.exit) once the node is
// fulfilled, as node NAME.onExit under the same boundary, a child of the node. It reports whether the node
// is done with its hook: it has none, it does not run (the node was skipped, the hook's expression is
// false, or the workflow is terminated before it started), or the hook's node is fulfilled. Successors of
// the node wait for this, as argo's do. prefix is how the caller's scope names the node ("steps.NAME"),
// for {{steps.NAME.status}} and {{steps.NAME.outputs.parameters.P}} in the hook's arguments.
func (e *Engine) exitHookDone(ctx context.Context, p *Pass, hook *wfv1.LifecycleHook, at hookSite) (bool, error) {
	parent := at.parent
	if hook == nil {
		return true, nil
	}
	if !fulfilled(parent) {
		return false, nil
	}
	if !parent.Phase.Completed() {
		return true, nil // skipped or omitted: argo runs no exit handler
	}
	call := hookCall{hook: hook, name: parent.Name + ".onExit", display: parent.DisplayName + ".onExit", exit: true}
	if p.node(call.name) == nil {
		if !shutdown(p).ShouldExecute(true) {
			return true, nil // terminated: exit handlers do not start
		}
		if hook.Expression != "" {
			run, err := argoexpr.EvalBool(hook.Expression, env.GetFuncMap(template.EnvMap(mergeParams(p.globals(), nodeScope(at.sc, at.prefix, parent)))))
			if err != nil {
				return true, e.errorHook(p, call, at, "hooks.exit.expression: "+err.Error())
			}
			if !run {
				return true, nil
			}
		}
	}
	n, err := e.runHook(ctx, p, call, at)
	return n != nil && fulfilled(n), err
}

// lifecycleHooksDone runs the hooks of a step or task other than exit (running, succeeded, ... by
// expression) on its node, as argo does: a hook whose expression holds over the scope, with PREFIX.status
// the node's phase, starts as node NODE.hooks.NAME, a child of the node under the same boundary. A hook
// runs at most once: its node, once created, is only driven on. It reports whether every hook started is
// fulfilled; the step group, or the task's dependents, wait for that.
func (e *Engine) lifecycleHooksDone(ctx context.Context, p *Pass, hooks wfv1.LifecycleHooks, at hookSite) (bool, error) {
	parent := at.parent
	done := true
	for _, name := range lifecycleHookNames(hooks) {
		hook := hooks[name]
		call := hookCall{hook: &hook, name: parent.Name + ".hooks." + string(name), display: parent.DisplayName + ".hooks." + string(name)}
		// Like argo, the expression sees the node's status but not yet its outputs.
		run, err := hookDue(p, call, mergeParams(p.globals(), at.sc, map[string]string{at.prefix + ".status": string(parent.Phase)}))
		if err != nil {
			return false, err
		}
		if !run {
			continue
		}
		n, err := e.runHook(ctx, p, call, at)
		if err != nil {
			return false, err
		}
		done = done && n != nil && fulfilled(n)
	}
	return done, nil
}

// lifecycleHookNames are the hooks other than exit, in a fixed order (argo walks a map).
func lifecycleHookNames(hooks wfv1.LifecycleHooks) []wfv1.LifecycleEvent {
	var names []wfv1.LifecycleEvent
	for name := range hooks {
		if name != wfv1.ExitLifecycleEvent {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// hasLifecycleHooks says whether hooks hold any hook other than exit.
func hasLifecycleHooks(hooks wfv1.LifecycleHooks) bool { return len(lifecycleHookNames(hooks)) > 0 }

// hookDue says whether a lifecycle hook runs this pass: its node exists already (it is driven on until
// fulfilled), or its expression holds over params. A hook without an expression is argo's error.
func hookDue(p *Pass, call hookCall, params map[string]string) (bool, error) {
	if p.node(call.name) != nil {
		return true, nil
	}
	if call.hook.Expression == "" {
		return false, fmt.Errorf("Expression required for hook %s", call.name) //nolint:staticcheck // ST1005: argo's message
	}
	run, err := argoexpr.EvalBool(call.hook.Expression, env.GetFuncMap(template.EnvMap(params)))
	if err != nil {
		return false, fmt.Errorf("evaluating the expression of hook %s: %w", call.name, err)
	}
	return run, nil
}

// nodeScope is the caller's scope with node n under prefix (its status and outputs), as a hook of n sees it.
func nodeScope(sc scope, prefix string, n *wfv1.NodeStatus) scope {
	local := scope{}
	for k, v := range sc {
		local[k] = v
	}
	local.addNode(prefix, n)
	return local
}

// runHook starts (or drives on) a hook of node parent as node call.name, a child of parent. Its
// arguments may name the node's outputs ({{steps.NAME.outputs.parameters.P}}, artifacts too); arguments
// that cannot be resolved error the hook's node, not the caller.
func (e *Engine) runHook(ctx context.Context, p *Pass, call hookCall, at hookSite) (*wfv1.NodeStatus, error) {
	local := nodeScope(at.sc, at.prefix, at.parent)
	args, err := resolveJSON(&call.hook.Arguments, mergeParams(p.globals(), local))
	if err == nil {
		args.Artifacts, err = artifactResolver{p: p, sc: local}.arguments(args.Artifacts)
	}
	if err != nil {
		return p.node(call.name), e.errorHook(p, call, at, err.Error())
	}
	opts := execOpts{flag: &wfv1.NodeFlag{Hooked: true}}
	if call.exit {
		// Everything an exit handler runs is part of it: its pods run on Stop and past the deadline.
		exiting := p.exiting
		p.exiting, opts.onExit = true, true
		defer func() { p.exiting = exiting }()
	}
	n, err := e.executeTemplate(ctx, &nodeCall{p: p, name: call.name, display: call.display, call: templateCall{name: call.hook.Template, ref: call.hook.TemplateRef}, args: *args, boundaryID: at.boundaryID, opts: opts})
	if n != nil {
		p.addChild(p.node(at.parent.Name), n.ID)
	}
	if err = recordedOnNode(err); err != nil {
		return nil, err
	}
	return p.node(call.name), nil
}

// errorHook records a hook that cannot run as an errored node, so the failure is visible and the node's
// successors are not held forever.
func (e *Engine) errorHook(p *Pass, call hookCall, at hookSite, msg string) error {
	n := e.errorNode(p, call.name, call.display, templateCall{name: call.hook.Template, ref: call.hook.TemplateRef}.templateName(), at.boundaryID, msg)
	n.NodeFlag = &wfv1.NodeFlag{Hooked: true}
	p.setNode(n)
	p.addChild(p.node(at.parent.Name), n.ID)
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
