//go:build realnode

package e2ereal_test

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
)

// A script's stdout becomes outputs.result and a file becomes an output parameter: argoexec reports both
// in its task result, and the successor's container gets them as arguments.
func TestRealExecutorPassesAScriptResultAndAFileParameterToTheSuccessor(t *testing.T) {
	e := newEnv(t, controller.Options{})
	wf := e.Submit(`
metadata: {name: pass-outputs}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: produce
        template: produce
    - - name: consume
        template: consume
        arguments:
          parameters:
          - {name: result, value: "{{steps.produce.outputs.result}}"}
          - {name: word, value: "{{steps.produce.outputs.parameters.word}}"}
  - name: produce
    script:
      image: busybox:1.35
      command: [sh]
      source: |
        echo -n bird > /tmp/word.txt
        echo 42
    outputs:
      parameters:
      - name: word
        valueFrom: {path: /tmp/word.txt}
  - name: consume
    inputs:
      parameters: [{name: result}, {name: word}]
    container:
      image: busybox:1.35
      command: [sh, -c, 'echo "got {{inputs.parameters.result}} and {{inputs.parameters.word}}"']
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase %s, want Succeeded\n%s\n%s", done.Status.Phase, harness.Describe(done), e.describePods())
	}
	produce := e.Node(done, "pass-outputs[0].produce")
	if produce.Outputs == nil || produce.Outputs.Result == nil || *produce.Outputs.Result != "42" {
		t.Errorf("produce's result = %v, want 42", produce.Outputs)
	}
	if got := parameter(produce.Outputs, "word"); got != "bird" {
		t.Errorf("produce's parameter word = %q, want bird", got)
	}
	result := e.taskResult(done, "pass-outputs[0].produce")
	if result.Outputs == nil || result.Outputs.Result == nil || *result.Outputs.Result != "42" {
		t.Errorf("argoexec's task result outputs = %+v, want result 42", result.Outputs)
	}
	if result.Labels["workflows.argoproj.io/report-outputs-completed"] != "true" {
		t.Errorf("argoexec's task result labels = %v, want report-outputs-completed=true", result.Labels)
	}
	consume := e.PodOf(done, "pass-outputs[1].consume")
	if got := e.programLogs(consume, "main"); !strings.HasPrefix(got, "got 42 and bird\n") {
		t.Errorf("consume printed %q, want %q", got, "got 42 and bird\n")
	}
	e.waitFinalizersReleased()
}

// parameter is the value of the named output parameter, "" when there is none.
func parameter(o *wfv1.Outputs, name string) string {
	if o == nil {
		return ""
	}
	for _, p := range o.Parameters {
		if p.Name == name && p.Value != nil {
			return p.Value.String()
		}
	}
	return ""
}
