package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// A denied function errors what evaluates it in the pass that reaches it, as any expression error does
// (argo's phases: a steps node whose group errored is Failed, a DAG with an errored task Error), with a
// message naming the function: no pass pays for 200 RSA keys (up to a CPU-second each).
func TestADeniedExpressionFunctionErrorsItsWorkflowInOnePass(t *testing.T) {
	for _, tc := range []struct {
		sentence, spec string
		pods           int // created before the expression is reached
		phase          wfv1.WorkflowPhase
	}{
		{"a steps loop whose items call sprig.genPrivateKey", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: key
        template: work
        withSequence: {count: "200"}
        arguments: {parameters: [{name: num, value: "{{=sprig.genPrivateKey('rsa') + item}}"}]}` + exprWork, 0, wfv1.WorkflowFailed},
		{"a DAG loop whose items call sprig.genPrivateKey", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: key
        template: work
        withSequence: {count: "200"}
        arguments: {parameters: [{name: num, value: "{{=sprig.genPrivateKey('rsa') + item}}"}]}` + exprWork, 0, wfv1.WorkflowError},
		{"a hook whose expression calls sprig.htpasswd", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: hooked
        template: work
        hooks: {running: {expression: "sprig.htpasswd('u', 'p') != ''", template: work}}` + exprWork, 1, wfv1.WorkflowFailed},
	} {
		t.Run(tc.sentence+" ends in one pass, naming it", func(t *testing.T) {
			w := newExprWorkflow(t, tc.spec)
			w.pass()
			if w.wf.Status.Phase != tc.phase {
				t.Fatalf("workflow %s %q after one pass, want %s", w.wf.Status.Phase, w.wf.Status.Message, tc.phase)
			}
			var named bool
			for _, n := range w.wf.Status.Nodes {
				named = named || strings.Contains(n.Message, "is not available in wfguard's expressions")
			}
			if !named || len(w.pods.created) != tc.pods {
				t.Fatalf("workflow %s %q, nodes %v, %d pods; want a node naming the denied function and %d pods",
					w.wf.Status.Phase, w.wf.Status.Message, w.wf.Status.Nodes, len(w.pods.created), tc.pods)
			}
		})
	}
}
