package engine

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestFailFastStopsStartingStepsOnceOneFailed(t *testing.T) {
	for _, tc := range []struct {
		sentence  string
		failFast  string
		started   bool
		wfMessage string
	}{
		{"with failFast the next iteration never starts and argo's message ends the workflow", "true", false, FailFastMessage},
		{"without failFast the group runs to its end", "false", true, ""},
	} {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: ff, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    parallelism: 1
    failFast: `+tc.failFast+`
    steps:
    - - {name: unit, template: work, withItems: [a, b]}
  - {name: work, container: {image: alpine, command: ["true"]}}
`), wf); err != nil {
			t.Fatal(err)
		}
		e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		pass := func() {
			now = now.Add(time.Second)
			runPass(t, e, wf, now)
		}
		pass()
		first := p0(wf, "ff[0].unit(0:a)")
		if first == nil {
			t.Fatalf("%s: the first iteration did not start", tc.sentence)
		}
		synced := true
		first.Phase, first.TaskResultSynced = wfv1.NodeFailed, &synced
		wf.Status.Nodes[first.ID] = *first
		pass()
		if started := p0(wf, "ff[0].unit(1:b)") != nil; started != tc.started {
			t.Errorf("%s: second iteration started %v, want %v", tc.sentence, started, tc.started)
		}
		if tc.wfMessage == "" {
			continue
		}
		if wf.Status.Phase != wfv1.WorkflowFailed || wf.Status.Message != tc.wfMessage {
			t.Errorf("%s: workflow %s %q, want Failed %q", tc.sentence, wf.Status.Phase, wf.Status.Message, tc.wfMessage)
		}
		if sg := p0(wf, "ff[0]"); sg == nil || sg.Phase != wfv1.NodeFailed || sg.Message != FailFastMessage {
			t.Errorf("%s: step group %+v, want Failed with argo's message", tc.sentence, sg)
		}
	}
}
