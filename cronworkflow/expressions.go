package cronworkflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/Knetic/govaluate"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/template"

	_ "github.com/wfguard/wfguard/exprlimits" // bounds what every expression's functions may cost (docs/engine.md)
)

// cronVariables are the cronworkflow.* variables argo offers to when and stopStrategy.expression. As in
// argo v3.7, cronworkflow.annotations holds the labels (annotations.json holds the annotations).
func cronVariables(cwf *wfv1.CronWorkflow) (map[string]any, error) {
	labels, err := json.Marshal(cwf.Labels)
	if err != nil {
		return nil, fmt.Errorf("encoding the labels: %w", err)
	}
	annotations, err := json.Marshal(cwf.Annotations)
	if err != nil {
		return nil, fmt.Errorf("encoding the annotations: %w", err)
	}
	var last *time.Time
	if cwf.Status.LastScheduledTime != nil {
		last = &cwf.Status.LastScheduledTime.Time
	}
	return map[string]any{
		"name": cwf.Name, "namespace": cwf.Namespace, "labels": cwf.Labels, "annotations": cwf.Labels,
		"failed": cwf.Status.Failed, "succeeded": cwf.Status.Succeeded, "lastScheduledTime": last,
		"labels.json": labels, "annotations.json": annotations,
	}, nil
}

// whenAllows evaluates spec.when as argo does: {{cronworkflow.*}} placeholders (and {{= expressions}}) are
// substituted, then the result must be a boolean expression. An empty when allows.
func whenAllows(cwf *wfv1.CronWorkflow) (bool, error) {
	if cwf.Spec.When == "" {
		return true, nil
	}
	vars, err := cronVariables(cwf)
	if err != nil {
		return false, err
	}
	flat := make(map[string]any, len(vars))
	for k, v := range vars {
		flat["cronworkflow."+k] = v
	}
	tmpl, err := template.NewTemplate(cwf.Spec.When)
	if err != nil {
		return false, fmt.Errorf("parsing when %q: %w", cwf.Spec.When, err)
	}
	substituted, err := tmpl.Replace(flat, false)
	if err != nil {
		return false, fmt.Errorf("substituting when %q: %w", cwf.Spec.When, err)
	}
	expression, err := govaluate.NewEvaluableExpression(substituted)
	if err != nil {
		return false, fmt.Errorf("parsing when %q (as %q): %w", cwf.Spec.When, substituted, err)
	}
	result, err := expression.Evaluate(nil)
	if err != nil {
		return false, fmt.Errorf("evaluating when %q (as %q): %w", cwf.Spec.When, substituted, err)
	}
	allowed, ok := result.(bool)
	if !ok {
		return false, fmt.Errorf("when %q evaluated to %v, want true or false", cwf.Spec.When, result)
	}
	return allowed, nil
}

// stopReached evaluates spec.stopStrategy.expression over the cronworkflow variables; no strategy never stops.
func stopReached(cwf *wfv1.CronWorkflow) (bool, error) {
	if cwf.Spec.StopStrategy == nil {
		return false, nil
	}
	vars, err := cronVariables(cwf)
	if err != nil {
		return false, err
	}
	stop, err := argoexpr.EvalBool(cwf.Spec.StopStrategy.Expression, map[string]any{"cronworkflow": vars})
	if err != nil {
		return false, fmt.Errorf("evaluating stopStrategy.expression: %w", err)
	}
	return stop, nil
}
