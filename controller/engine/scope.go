package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Knetic/govaluate"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/strftime"
	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/argoproj/argo-workflows/v3/workflow/common"

	_ "github.com/wfguard/wfguard/exprlimits" // bounds what every expression's functions may cost (docs/engine.md)
)

// globalParams are the {{workflow.*}} variables.
func globalParams(wf *wfv1.Workflow) common.Parameters {
	g := common.Parameters{
		"workflow.name":               wf.Name,
		"workflow.namespace":          wf.Namespace,
		"workflow.uid":                string(wf.UID),
		"workflow.mainEntrypoint":     wf.Spec.Entrypoint,
		"workflow.serviceAccountName": wf.Spec.ServiceAccountName,
		"workflow.creationTimestamp":  wf.CreationTimestamp.Format(time.RFC3339),
		"workflow.status":             string(wf.Status.Phase),
	}
	for _, p := range wf.Spec.Arguments.Parameters {
		if p.Value != nil {
			g["workflow.parameters."+p.Name] = p.Value.String()
		}
	}
	for k, v := range wf.Labels {
		g["workflow.labels."+k] = v
	}
	for k, v := range wf.Annotations {
		g["workflow.annotations."+k] = v
	}
	if wf.Spec.Priority != nil {
		g["workflow.priority"] = fmt.Sprint(*wf.Spec.Priority)
	}
	if t, ok := wf.Annotations[common.AnnotationKeyCronWfScheduledTime]; ok {
		g[common.GlobalVarWorkflowCronScheduleTime] = t
	}
	addCreationTimestampForms(g, wf.CreationTimestamp.Time)
	globalOutputParams(wf, g)
	// The JSON forms, under both of argo's names; expression tags read the .json ones, e.g.
	// jsonpath(workflow.parameters.json, '$[0].value').
	for name, v := range map[string]any{"workflow.parameters": wf.Spec.Arguments.Parameters,
		"workflow.labels": wf.Labels, "workflow.annotations": wf.Annotations} {
		if data, err := json.Marshal(v); err == nil {
			g[name] = string(data)
			g[name+".json"] = string(data)
		}
	}
	return g
}

// addCreationTimestampForms adds argo's {{workflow.creationTimestamp.X}} variables: one per strftime
// character X, .s (Unix seconds) and .RFC3339.
func addCreationTimestampForms(g common.Parameters, created time.Time) {
	for char := range strftime.FormatChars {
		g["workflow.creationTimestamp."+string(char)] = strftime.Format("%"+string(char), created)
	}
	g["workflow.creationTimestamp.s"] = strconv.FormatInt(created.Unix(), 10)
	g["workflow.creationTimestamp.RFC3339"] = created.Format(time.RFC3339)
}

// scope is the local variables of a steps or DAG template: inputs of the template and the outputs of
// completed siblings, keyed the way argo references them (steps.X.outputs.result, tasks.X.status, ...).
type scope map[string]string

func (s scope) addNode(prefix string, n *wfv1.NodeStatus) {
	s[prefix+".id"] = n.ID
	s[prefix+".status"] = string(n.Phase)
	s[prefix+".startedAt"] = n.StartedAt.Format(time.RFC3339)
	s[prefix+".finishedAt"] = n.FinishedAt.Format(time.RFC3339)
	if n.PodIP != "" {
		s[prefix+".ip"] = n.PodIP // a daemon's pod IP, {{steps.X.ip}} / {{tasks.X.ip}}
	}
	if n.Outputs == nil {
		return
	}
	if n.Outputs.Result != nil {
		s[prefix+".outputs.result"] = *n.Outputs.Result
	}
	if n.Outputs.ExitCode != nil {
		s[prefix+".exitCode"] = *n.Outputs.ExitCode
	}
	for _, p := range n.Outputs.Parameters {
		if p.Value != nil {
			s[prefix+".outputs.parameters."+p.Name] = p.Value.String()
		}
	}
	if data, err := json.Marshal(n.Outputs.Parameters); err == nil {
		s[prefix+".outputs.parameters"] = string(data)
	}
}

func (s scope) withInputs(tmpl *wfv1.Template) scope {
	out := scope{}
	for k, v := range s {
		out[k] = v
	}
	for _, p := range tmpl.Inputs.Parameters {
		if p.Value != nil {
			out["inputs.parameters."+p.Name] = p.Value.String()
		}
	}
	return out
}

// resolveJSON substitutes {{...}} in v (a step or task) with globals and the scope. Like argo, unresolved
// references stay as they are (validation has already rejected the ones that can never resolve).
func resolveJSON[T any](v *T, params ...map[string]string) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	merged := map[string]string{}
	for _, m := range params {
		for k, val := range m {
			merged[k] = val
		}
	}
	replaced, err := template.Replace(string(data), merged, true)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal([]byte(replaced), out); err != nil {
		return nil, fmt.Errorf("decoding after substitution: %w", err)
	}
	return out, nil
}

// evalWhen evaluates a substituted `when` as argo does: bare words compare as strings. Error messages
// keep argo's capitalization, since users match on them.
//
//nolint:staticcheck // ST1005: argo's messages start with a capital
func evalWhen(when string) (bool, error) {
	if when == "" {
		return true, nil
	}
	expr, err := govaluate.NewEvaluableExpression(when)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid token") {
			return false, fmt.Errorf("Invalid 'when' expression '%s': %v (hint: try wrapping the affected expression in quotes (\"))", when, err)
		}
		return false, fmt.Errorf("Invalid 'when' expression '%s': %v", when, err)
	}
	tokens := expr.Tokens()
	for i, tok := range tokens {
		if tok.Kind == govaluate.VARIABLE {
			tok.Kind = govaluate.STRING
			tokens[i] = tok
		}
	}
	expr, err = govaluate.NewEvaluableExpressionFromTokens(tokens)
	if err != nil {
		return false, fmt.Errorf("Failed to parse 'when' expression '%s': %v", when, err)
	}
	result, err := expr.Evaluate(nil)
	if err != nil {
		return false, fmt.Errorf("Failed to evaluate 'when' expresion '%s': %v", when, err) // argo's spelling
	}
	b, ok := result.(bool)
	if !ok {
		return false, fmt.Errorf("Expected boolean evaluation for '%s'. Got %v", when, result)
	}
	return b, nil
}

// templateOutputs resolves a steps/DAG template's outputs.parameters (valueFrom.expression or .parameter)
// and outputs.artifacts (from or fromExpression) from its scope.
func templateOutputs(tmpl *wfv1.Template, s scope, globals common.Parameters, arts artifactResolver) (*wfv1.Outputs, error) {
	if len(tmpl.Outputs.Parameters) == 0 && len(tmpl.Outputs.Artifacts) == 0 {
		return nil, nil
	}
	out := &wfv1.Outputs{}
	if len(tmpl.Outputs.Artifacts) > 0 {
		artifacts, err := arts.outputs(tmpl)
		if err != nil {
			return nil, err
		}
		out.Artifacts = artifacts
	}
	for _, p := range tmpl.Outputs.Parameters {
		param := wfv1.Parameter{Name: p.Name}
		switch {
		case p.ValueFrom != nil && p.ValueFrom.Expression != "":
			v, err := arts.eval(p.ValueFrom.Expression)
			if err != nil {
				if p.ValueFrom.Default == nil {
					return nil, fmt.Errorf("resolving outputs.parameters.%s: %w", p.Name, err)
				}
				v = p.ValueFrom.Default.String()
			}
			param.Value = wfv1.AnyStringPtr(v) // argo's rendering of any value (%v)
		case p.ValueFrom != nil && p.ValueFrom.Parameter != "":
			v, err := resolveValue(p.ValueFrom.Parameter, mergeParams(globals, s))
			if err != nil {
				if p.ValueFrom.Default == nil {
					return nil, fmt.Errorf("resolving outputs.parameters.%s: %w", p.Name, err)
				}
				v = p.ValueFrom.Default.String()
			}
			param.Value = wfv1.AnyStringPtr(v)
		case p.Value != nil:
			param.Value = p.Value
		}
		out.Parameters = append(out.Parameters, param)
	}
	return out, nil
}

func mergeParams(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// replaceString substitutes {{...}} in a plain (non-JSON) string; unresolved references are errors.
func replaceString(s string, params map[string]string) (string, error) {
	t, err := template.NewTemplate(s)
	if err != nil {
		return "", err
	}
	m := make(map[string]any, len(params))
	for k, v := range params {
		m[k] = v
	}
	return t.Replace(m, false)
}

// resolveValue resolves a value that is one reference, e.g. {{steps.x.outputs.parameters.p}}, to the
// referenced value as is (a fan-in's JSON list keeps its quotes); anything else is substituted.
func resolveValue(s string, params map[string]string) (string, error) {
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, "{{") && strings.HasSuffix(trimmed, "}}") && strings.Count(trimmed, "{{") == 1 {
		if v, ok := params[strings.TrimSpace(trimmed[2:len(trimmed)-2])]; ok {
			return v, nil
		}
	}
	return replaceString(s, params)
}
