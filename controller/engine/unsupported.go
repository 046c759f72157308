package engine

import (
	"fmt"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// unsupported rejects specs that use argo features wfguard does not run yet, so a workflow fails loudly at
// start instead of running with part of its spec silently ignored. Templates reached through templateRef
// are checked by the same rules when they are first used (unsupportedInTemplate).
func unsupported(wf *wfv1.Workflow) error {
	var found []string
	add := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	s := &wf.Spec
	// Refused rather than ignored: a user relying on them would otherwise lose them without a word.
	if s.ArtifactGC != nil && s.ArtifactGC.Strategy != "" && s.ArtifactGC.Strategy != wfv1.ArtifactGCNever {
		add("spec.artifactGC")
	}
	for i := range s.Templates {
		t := &s.Templates[i]
		for _, d := range unsupportedInTemplate(t) {
			add("template %s: %s", t.Name, d)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("not supported by wfguard yet: %s", strings.Join(found, "; "))
}

// unsupportedInTemplate lists what one template uses that wfguard does not run yet.
func unsupportedInTemplate(t *wfv1.Template) []string {
	var found []string
	add := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	// The kinds without an executor today are http and plugin, which argo runs in its agent pod.
	if kind := t.GetType(); kind != wfv1.TemplateTypeUnknown {
		if _, runs := executorOf(kind); !runs {
			add("%s template (argo runs it in its agent pod, which wfguard does not run)", strings.ToLower(string(kind)))
		}
	}
	found = append(found, unsupportedArtifacts(t)...)
	for _, group := range t.Steps {
		for _, step := range group.Steps {
			for _, d := range unsupportedInInline(step.Inline) {
				add("step %s: inline: %s", step.Name, d)
			}
			for _, a := range step.Arguments.Artifacts {
				if a.FromExpression != "" {
					add("step %s: arguments.artifacts.%s.fromExpression", step.Name, a.Name)
				}
			}
		}
	}
	if t.DAG != nil {
		for _, task := range t.DAG.Tasks {
			for _, d := range unsupportedInInline(task.Inline) {
				add("task %s: inline: %s", task.Name, d)
			}
			for _, a := range task.Arguments.Artifacts {
				if a.FromExpression != "" {
					add("task %s: arguments.artifacts.%s.fromExpression", task.Name, a.Name)
				}
			}
		}
	}
	return found
}

// unsupportedArtifacts lists the artifact features of a template wfguard does not run: fromExpression
// outside a steps or DAG template's outputs, and artifact GC.
func unsupportedArtifacts(t *wfv1.Template) []string {
	var found []string
	resolvesOutputs := t.Steps != nil || t.DAG != nil // its outputs are picked from its scope
	for _, a := range t.Outputs.Artifacts {
		if a.FromExpression != "" && !resolvesOutputs {
			found = append(found, fmt.Sprintf("outputs.artifacts.%s.fromExpression", a.Name))
		}
		if a.ArtifactGC != nil && a.ArtifactGC.Strategy != "" && a.ArtifactGC.Strategy != wfv1.ArtifactGCNever {
			found = append(found, fmt.Sprintf("outputs.artifacts.%s.artifactGC", a.Name))
		}
	}
	for _, a := range t.Inputs.Artifacts {
		if a.FromExpression != "" {
			found = append(found, fmt.Sprintf("inputs.artifacts.%s.fromExpression", a.Name))
		}
	}
	return found
}

// unsupportedInInline checks a step's or task's inline template by the same rules as a named one.
func unsupportedInInline(inline *wfv1.Template) []string {
	if inline == nil {
		return nil
	}
	return unsupportedInTemplate(inline)
}

// unsupportedStored applies the same rules to the templates argo's validation stored for the workflow's
// references (status.storedTemplates): they run too.
func unsupportedStored(wf *wfv1.Workflow) error {
	var found []string
	for key, t := range wf.Status.StoredTemplates {
		for _, d := range unsupportedInTemplate(&t) {
			found = append(found, fmt.Sprintf("template %s: %s", key, d))
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return fmt.Errorf("not supported by wfguard yet: %s", strings.Join(found, "; "))
}
