package taskresult

import (
	"fmt"
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// ApplyOutputDefaults fills, in outputs, each declared output parameter the executor did not report with
// its valueFrom.default (argoexec does the same when the file is missing), and returns the outputs to
// store (nil stays nil when nothing was declared with a default).
func ApplyOutputDefaults(tmpl *wfv1.Template, outputs *wfv1.Outputs) *wfv1.Outputs {
	if tmpl == nil {
		return outputs
	}
	for _, p := range tmpl.Outputs.Parameters {
		if p.ValueFrom == nil || p.ValueFrom.Default == nil || hasValue(outputs, p.Name) {
			continue
		}
		if outputs == nil {
			outputs = &wfv1.Outputs{}
		}
		v := *p.ValueFrom.Default
		if i := slices.IndexFunc(outputs.Parameters, func(q wfv1.Parameter) bool { return q.Name == p.Name }); i >= 0 {
			outputs.Parameters[i].Value = &v
			continue
		}
		outputs.Parameters = append(outputs.Parameters, wfv1.Parameter{Name: p.Name, Value: &v})
	}
	return outputs
}

// MissingOutputs lists the outputs a pod template declares that outputs lacks, after defaults: output
// parameters without a value (and without valueFrom.default) and non-optional artifacts. A finalized
// result that misses one of them can never supply it.
func MissingOutputs(tmpl *wfv1.Template, outputs *wfv1.Outputs) []string {
	if tmpl == nil {
		return nil
	}
	var missing []string
	for _, p := range tmpl.Outputs.Parameters {
		if !hasValue(outputs, p.Name) && (p.ValueFrom == nil || p.ValueFrom.Default == nil) {
			missing = append(missing, "parameter "+p.Name)
		}
	}
	for _, a := range tmpl.Outputs.Artifacts {
		if !a.Optional && (outputs == nil || !slices.ContainsFunc(outputs.Artifacts, func(b wfv1.Artifact) bool { return b.Name == a.Name })) {
			missing = append(missing, "artifact "+a.Name)
		}
	}
	return missing
}

func hasValue(outputs *wfv1.Outputs, name string) bool {
	return outputs != nil && slices.ContainsFunc(outputs.Parameters, func(p wfv1.Parameter) bool { return p.Name == name && p.Value != nil })
}

// ApplySuppliedDefaults returns a copy of a suspend node's outputs in which every parameter still waiting
// for a supplied value takes its valueFrom.default; one with no default is argo's error (the node cannot
// complete without it).
func ApplySuppliedDefaults(outputs *wfv1.Outputs) (*wfv1.Outputs, error) {
	if outputs == nil {
		return nil, nil
	}
	out := outputs.DeepCopy()
	for i, param := range out.Parameters {
		if param.ValueFrom == nil || param.ValueFrom.Supplied == nil {
			continue
		}
		if param.ValueFrom.Default == nil {
			return nil, fmt.Errorf("raw output parameter '%s' has not been set and does not have a default value", param.Name)
		}
		out.Parameters[i].Value = param.ValueFrom.Default
		out.Parameters[i].ValueFrom = nil
	}
	return out, nil
}
