package engine

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestAWhenThatCannotBeEvaluatedErrorsTheGroupAsArgoRecordsIt(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		step     string
		child    string
		want     wfv1.NodePhase // the child's phase, "" for no child node
	}{
		{"a plain step errors its group and leaves no node of its own", `{name: go, template: work, when: "counter-result < 10"}`, "w[0].go", ""},
		{"a loop's iteration is recorded as an errored node", `{name: go, template: work, when: "{{item}} < 10", withItems: [counter-result]}`,
			"w[0].go(0:counter-result)", wfv1.NodeError},
	} {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: w, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - `+tc.step+`
  - {name: work, container: {image: alpine, command: ["true"]}}
`), wf); err != nil {
			t.Fatal(err)
		}
		e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}
		runPass(t, e, wf, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		if sg := p0(wf, "w[0]"); sg == nil || sg.Phase != wfv1.NodeError {
			t.Errorf("%s: group %+v, want Error", tc.sentence, sg)
		}
		var got wfv1.NodePhase
		if child := p0(wf, tc.child); child != nil {
			got = child.Phase
		}
		if got != tc.want {
			t.Errorf("%s: child %s is %q, want %q", tc.sentence, tc.child, got, tc.want)
		}
	}
}
