package engine

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const lookupFailed = `failed to look-up entrypoint/cmd for image "nginx:1.13", you must either explicitly specify the command`

func TestAPodThatCannotBeBuiltErrorsItsNodeAndTellsItsCaller(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		spec     string
		// nodes: name → "phase message-prefix"
		want       map[string]string
		notCreated []string
		wfPhase    wfv1.WorkflowPhase
		wfMessage  string
	}{
		{"a step without a command errors its group with argo's message and starts none of the group's later steps", `
  - name: main
    steps:
    - - {name: ok, template: work}
      - {name: server, template: nocmd}
      - {name: later, template: work}
    - - {name: next, template: work}`,
			map[string]string{
				"built[0].server": "Error " + lookupFailed,
				"built[0]":        "Error step group deemed errored due to child built[0].server error: " + lookupFailed,
				"built":           "Failed step group deemed errored due to child built[0].server error: " + lookupFailed,
			},
			[]string{"built[0].later", "built[1].next"}, wfv1.WorkflowFailed, "step group deemed errored due to child built[0].server error: " + lookupFailed},
		{"a task without a command errors as argo's task does", `
  - name: main
    dag:
      tasks:
      - {name: server, template: nocmd}`,
			map[string]string{
				"built.server": "Error task 'built.server' errored: " + lookupFailed,
				"built":        "Error ",
			},
			nil, wfv1.WorkflowError, ""},
		{"an entrypoint without a command errors the workflow with the node's message", `
  - name: main
    container: {image: "nginx:1.13"}`,
			map[string]string{"built": "Error " + lookupFailed},
			nil, wfv1.WorkflowError, lookupFailed},
	} {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: built, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:`+tc.spec+`
  - {name: work, container: {image: alpine, command: ["true"]}}
  - {name: nocmd, container: {image: "nginx:1.13"}}
`), wf); err != nil {
			t.Fatal(err)
		}
		pods := &recordingPods{created: map[string]*corev1.Pod{}}
		e := &Engine{Pods: pods}
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		for range 2 {
			now = now.Add(time.Second)
			runPass(t, e, wf, now)
		}
		for name, want := range tc.want {
			n := p0(wf, name)
			if n == nil {
				t.Errorf("%s: node %s missing", tc.sentence, name)
				continue
			}
			if got := string(n.Phase) + " " + n.Message; !strings.HasPrefix(got, want) {
				t.Errorf("%s: node %s is %q, want it to start with %q", tc.sentence, name, got, want)
			}
		}
		for _, name := range tc.notCreated {
			if p0(wf, name) != nil {
				t.Errorf("%s: node %s was started", tc.sentence, name)
			}
		}
		if wf.Status.Phase != tc.wfPhase || !strings.HasPrefix(wf.Status.Message, tc.wfMessage) {
			t.Errorf("%s: workflow %s %q, want %s %q", tc.sentence, wf.Status.Phase, wf.Status.Message, tc.wfPhase, tc.wfMessage)
		}
	}
}
