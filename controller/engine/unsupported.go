package engine

import (
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// unsupported rejects specs that use argo features wfguard does not run yet, so a workflow fails loudly at
// start instead of running with part of its spec silently ignored.
func unsupported(wf *wfv1.Workflow) error {
	var found []string
	add := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	s := &wf.Spec
	for name, hook := range s.Hooks {
		if name != wfv1.ExitLifecycleEvent {
			add("spec.hooks.%s", name)
		} else if hook.TemplateRef != nil {
			add("spec.hooks.exit.templateRef")
		}
	}
	if s.WorkflowTemplateRef != nil {
		add("spec.workflowTemplateRef")
	}
	if s.TTLStrategy != nil {
		add("spec.ttlStrategy")
	}
	if s.Synchronization != nil {
		add("spec.synchronization")
	}
	if s.TemplateDefaults != nil {
		add("spec.templateDefaults")
	}
	if s.RetryStrategy != nil && s.RetryStrategy.Affinity != nil {
		add("spec.retryStrategy.affinity")
	}
	for _, t := range s.Templates {
		where := "template " + t.Name
		switch {
		case t.RetryStrategy != nil && t.RetryStrategy.Affinity != nil:
			add("%s: retryStrategy.affinity", where)
		case t.Memoize != nil:
			add("%s: memoize", where)
		case t.Synchronization != nil:
			add("%s: synchronization", where)
		case t.Daemon != nil && *t.Daemon:
			add("%s: daemon", where)
		case len(t.Inputs.Artifacts) > 0:
			add("%s: inputs.artifacts", where)
		}
		for _, group := range t.Steps {
			for _, step := range group.Steps {
				if d := refOrHook(step.TemplateRef, step.Inline, step.OnExit, step.Hooks); d != "" {
					add("%s step %s: %s", where, step.Name, d)
				}
			}
		}
		if t.DAG != nil {
			if t.DAG.Target != "" {
				add("%s: dag.target", where)
			}
			for _, task := range t.DAG.Tasks {
				if d := refOrHook(task.TemplateRef, task.Inline, task.OnExit, task.Hooks); d != "" {
					add("%s task %s: %s", where, task.Name, d)
				}
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("not supported by wfguard yet: %s", strings.Join(found, "; "))
}

func refOrHook(ref *wfv1.TemplateRef, inline *wfv1.Template, onExit string, hooks wfv1.LifecycleHooks) string {
	switch {
	case ref != nil:
		return "templateRef"
	case inline != nil:
		return "inline templates"
	case onExit != "":
		return "onExit"
	case len(hooks) > 0:
		return "hooks"
	}
	return ""
}
