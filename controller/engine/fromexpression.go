package engine

import (
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/expr-lang/expr"
)

// evaluate is the artifact an output's fromExpression picks, e.g.
// `steps.flip.outputs.result == 'heads' ? steps.heads.outputs.artifacts.r : steps.tails.outputs.artifacts.r`.
func (r artifactResolver) evaluate(art *wfv1.Artifact) (*wfv1.Artifact, error) {
	v, err := r.eval(art.FromExpression)
	if err != nil {
		return nil, err
	}
	switch a := v.(type) {
	case wfv1.Artifact:
		return a.DeepCopy(), nil
	case *wfv1.Artifact:
		if a != nil {
			return a.DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("Variable {{%v}} is not an artifact", art) //nolint:staticcheck // ST1005: argo's message
}

// eval runs an expression of a steps or DAG template's outputs (fromExpression, valueFrom.expression)
// over argo's environment for them: the template's local scope only, not the workflow's globals.
func (r artifactResolver) eval(expression string) (any, error) {
	vars := env.GetFuncMap(r.expressionScope())
	program, err := expr.Compile(expression, expr.Env(vars))
	if err != nil {
		return nil, err // argo's error as is
	}
	return expr.Run(program, vars)
}

// expressionScope is the local scope with artifacts as values: each step's or task's output artifacts
// (steps.X.outputs.artifacts.A) and the template's input artifacts, as argo's scope holds them.
func (r artifactResolver) expressionScope() map[string]any {
	m := make(map[string]any, len(r.sc))
	for k, v := range r.sc {
		m[k] = v
	}
	for k, id := range r.sc {
		prefix, ok := nodePrefix(k)
		if !ok {
			continue
		}
		if n := r.p.nodeByID(id); n != nil && n.Outputs != nil {
			for _, a := range n.Outputs.Artifacts {
				m[prefix+".outputs.artifacts."+a.Name] = a
			}
		}
	}
	if r.inputs != nil {
		for i := range r.inputs.Inputs.Artifacts {
			a := &r.inputs.Inputs.Artifacts[i]
			m["inputs.artifacts."+a.Name] = a
		}
	}
	return m
}

// nodePrefix is "steps.X" or "tasks.X" when key is that step's or task's ".id" entry of a scope.
func nodePrefix(key string) (string, bool) {
	prefix, ok := strings.CutSuffix(key, ".id")
	if !ok {
		return "", false
	}
	kind, name, ok := strings.Cut(prefix, ".")
	if !ok || (kind != "steps" && kind != "tasks") || strings.Contains(name, ".") {
		return "", false
	}
	return prefix, true
}
