package engine

import (
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// withTemplateDefaults returns t with the spec's templateDefaults under it, as argo merges them when it
// runs a template: the template's own fields win, lists merge by their keys, and a default of another
// template type (container defaults on a script template, say) is left out so it cannot change the
// template's type. t itself is not changed; without defaults t is returned as it is.
func withTemplateDefaults(spec *wfv1.WorkflowSpec, t *wfv1.Template) (*wfv1.Template, error) {
	if spec.TemplateDefaults == nil || t == nil {
		return t, nil
	}
	defaults := applicableDefaults(spec.TemplateDefaults, t.GetType())
	defaultsJSON, err := json.Marshal(defaults)
	if err != nil {
		return nil, fmt.Errorf("encoding templateDefaults: %w", err)
	}
	own, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encoding template %s: %w", t.Name, err)
	}
	merged, err := strategicpatch.StrategicMergePatch(defaultsJSON, own, wfv1.Template{})
	if err != nil {
		return nil, fmt.Errorf("merging templateDefaults into template %s: %w", t.Name, err)
	}
	out := &wfv1.Template{}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("decoding template %s with templateDefaults: %w", t.Name, err)
	}
	return out, nil
}

// applicableDefaults drops the type-defining parts of the defaults (container, script, steps, dag, ...)
// that are not of the template's own type.
func applicableDefaults(d *wfv1.Template, typ wfv1.TemplateType) *wfv1.Template {
	out := d.DeepCopy()
	keep := func(t wfv1.TemplateType) bool { return t == typ }
	if !keep(wfv1.TemplateTypeContainer) {
		out.Container = nil
	}
	if !keep(wfv1.TemplateTypeContainerSet) {
		out.ContainerSet = nil
	}
	if !keep(wfv1.TemplateTypeScript) {
		out.Script = nil
	}
	if !keep(wfv1.TemplateTypeResource) {
		out.Resource = nil
	}
	if !keep(wfv1.TemplateTypeData) {
		out.Data = nil
	}
	if !keep(wfv1.TemplateTypeHTTP) {
		out.HTTP = nil
	}
	if !keep(wfv1.TemplateTypePlugin) {
		out.Plugin = nil
	}
	if !keep(wfv1.TemplateTypeSuspend) {
		out.Suspend = nil
	}
	if !keep(wfv1.TemplateTypeDAG) {
		out.DAG = nil
	}
	return out
}
