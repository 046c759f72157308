package workload

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// RecursionBomb is a workflow whose template calls itself twice (issue #44 item 2): a binary tree that
// expands without end unless the controller ends it at the recursion depth.
type RecursionBomb struct {
	// Shape is how the template calls itself: "steps" or "dag".
	Shape    string
	Workflow func(name string) *wfv1.Workflow
}

// RecursionBombs are the shapes the chaos run and the hostile benchmark submit.
var RecursionBombs = []RecursionBomb{
	{Shape: "steps", Workflow: func(name string) *wfv1.Workflow {
		return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: wfv1.WorkflowSpec{Entrypoint: "main",
			Templates: []wfv1.Template{{Name: "main", Steps: []wfv1.ParallelSteps{{Steps: []wfv1.WorkflowStep{
				{Name: "a", Template: "main"}, {Name: "b", Template: "main"}}}}}}}}
	}},
	{Shape: "dag", Workflow: func(name string) *wfv1.Workflow {
		return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: wfv1.WorkflowSpec{Entrypoint: "main",
			Templates: []wfv1.Template{{Name: "main", DAG: &wfv1.DAGTemplate{Tasks: []wfv1.DAGTask{
				{Name: "a", Template: "main"}, {Name: "b", Template: "main"}}}}}}}
	}},
}

// RecursionEnded is in the message of a workflow ended at the recursion depth.
const RecursionEnded = "Maximum recursion depth exceeded"
