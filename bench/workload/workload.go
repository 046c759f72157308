package workload

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// OutputParameter is declared by every step and passed to its successors, so a node that "succeeded"
// without its result shows up as a missing value.
const OutputParameter = "out"

// StepTemplate is a container step with an optional input "in" and the output parameter.
func StepTemplate() wfv1.Template {
	return wfv1.Template{
		Name:      "step",
		Inputs:    wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: "in", Default: wfv1.AnyStringPtr("")}}},
		Outputs:   wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: OutputParameter, ValueFrom: &wfv1.ValueFrom{Path: "/tmp/out"}}}},
		Container: &corev1.Container{Image: "busybox", Command: []string{"sh", "-c", "echo ok > /tmp/out"}},
	}
}

// Consume passes the output of from ("steps" or "tasks" kind) to a step's input.
func Consume(kind, from string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "in",
		Value: wfv1.AnyStringPtr(fmt.Sprintf("{{%s.%s.outputs.parameters.%s}}", kind, from, OutputParameter))}}}
}
