package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/expr-lang/expr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// systemPrefix is argo's own label and annotation namespace: the controller's instance ID, phase and
// completion labels live there, and a workflow moving itself out of this controller's selector would be
// wedged, so workflowMetadata may not set them (argo lets it).
const systemPrefix = "workflows.argoproj.io/"

// applyWorkflowMetadata sets spec.workflowMetadata's labels, annotations and labelsFrom expressions on the
// Workflow when it starts, as argo does, with argo's validation of label values and its messages.
func applyWorkflowMetadata(p *Pass) error {
	md := execSpec(p.WF).WorkflowMetadata
	if md == nil {
		return nil
	}
	labels := map[string]string{}
	for k, v := range md.Labels {
		if errs := validation.IsValidLabelValue(v); errs != nil {
			return fmt.Errorf("invalid label value %q for label %q: %s", v, k, strings.Join(errs, ";"))
		}
		labels[k] = v
	}
	globals := p.globals()
	for k, v := range labels {
		globals["workflow.labels."+k] = v
	}
	for k, v := range md.Annotations {
		globals["workflow.annotations."+k] = v
	}
	vars := env.GetFuncMap(template.EnvMap(globals))
	for _, k := range slices.Sorted(maps.Keys(md.LabelsFrom)) {
		f := md.LabelsFrom[k]
		program, err := expr.Compile(f.Expression, expr.Env(vars))
		if err != nil {
			return fmt.Errorf("Failed to compile function for expression %q: %w", f.Expression, err) //nolint:staticcheck // argo's message
		}
		r, err := expr.Run(program, vars)
		if err != nil {
			return fmt.Errorf("failed to evaluate label %q expression %q: %w", k, f.Expression, err)
		}
		v, ok := r.(string)
		if !ok {
			return fmt.Errorf("failed to evaluate label %q expression %q evaluted to %T but must be a string", k, f.Expression, r)
		}
		if errs := validation.IsValidLabelValue(v); errs != nil {
			return fmt.Errorf("invalid label value %q for label %q and expression %q: %s", v, k, f.Expression, strings.Join(errs, ";"))
		}
		labels[k] = v
	}
	for k := range labels {
		if strings.HasPrefix(k, systemPrefix) {
			return fmt.Errorf("spec.workflowMetadata may not set label %q: labels under %s are the controller's", k, systemPrefix)
		}
	}
	for k := range md.Annotations {
		if strings.HasPrefix(k, systemPrefix) {
			return fmt.Errorf("spec.workflowMetadata may not set annotation %q: annotations under %s are the controller's", k, systemPrefix)
		}
	}
	for k, v := range labels {
		setLabel(p.WF, k, v)
	}
	if len(md.Annotations) > 0 && p.WF.Annotations == nil {
		p.WF.Annotations = map[string]string{}
	}
	for k, v := range md.Annotations {
		p.WF.Annotations[k] = v
	}
	return nil
}
