package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// A `when` that cannot be evaluated errors as argo errors it: a plain step's while its group is resolved,
// the group Error and no child node; a loop's per iteration, as an errored Skipped child (argo's
// fibonacci-seq-conditional-param, where `do-math-result != 1` cannot be evaluated).
func TestAWhenThatCannotBeEvaluatedErrorsWhereArgoErrorsIt(t *testing.T) {
	for _, tc := range []struct {
		sentence  string
		step      string
		wantChild bool
		wantMsg   string
	}{
		{"a plain step errors its group without a child", `{name: s, template: t, when: "do-math-result != 1"}`, false,
			"Failed to resolve references: Failed to evaluate 'when' expresion"},
		{"a loop's iteration errors as a child of its group", `{name: s, template: t, when: "do-{{item}} != 1", withItems: [math-result]}`, true,
			"Failed to evaluate 'when' expresion"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			w := newLockWorld(t)
			wf := w.workflow(`
metadata: {name: when, namespace: ns, uid: 55555555-5555-5555-5555-555555555555}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - `+tc.step+`
  - name: t
    container: {image: alpine}
`, w.now)
			w.pass(wf)
			sg := wf.Status.Nodes[wf.NodeID("when[0]")]
			if sg.Phase != wfv1.NodeError || !strings.HasPrefix(sg.Message, tc.wantMsg) || len(w.pods.created) != 0 {
				t.Fatalf("group %s %q with %d pods, want Error naming the when", sg.Phase, sg.Message, len(w.pods.created))
			}
			if got := len(sg.Children) > 0; got != tc.wantChild {
				t.Fatalf("group has children %v, want a child: %v", sg.Children, tc.wantChild)
			}
			if wf.Status.Phase != wfv1.WorkflowFailed {
				t.Fatalf("workflow %s, want Failed", wf.Status.Phase)
			}
		})
	}
}
