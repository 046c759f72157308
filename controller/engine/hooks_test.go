package engine

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestAnExitHandlerStartsOnlyOnceItsNodeIsFulfilledAndHoldsWhatFollows(t *testing.T) {
	for _, tc := range []struct {
		sentence, spec, node, hook, next string
	}{
		{"a step's onExit holds the next step group", `
  - name: main
    steps:
    - - {name: a, template: work, onExit: handler}
    - - {name: c, template: work}`, "hooked[0].a", "hooked[0].a.onExit", "hooked[1].c"},
		{"a task's hooks.exit holds its dependents", `
  - name: main
    dag:
      tasks:
      - {name: a, template: work, hooks: {exit: {template: handler}}}
      - {name: c, template: work, depends: a}`, "hooked.a", "hooked.a.onExit", "hooked.c"},
	} {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: hooked, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:`+tc.spec+`
  - {name: work, container: {image: alpine, command: ["true"]}}
  - {name: handler, container: {image: alpine, command: ["true"]}}
`), wf); err != nil {
			t.Fatal(err)
		}
		pods := &recordingPods{created: map[string]*corev1.Pod{}}
		e := &Engine{Pods: pods}
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		pass := func() {
			now = now.Add(time.Second)
			runPass(t, e, wf, now)
		}
		// finish ends a pod node; synced says whether its result has arrived.
		finish := func(name string, phase wfv1.NodePhase, synced bool) {
			n := p0(wf, name)
			n.Phase, n.TaskResultSynced = phase, &synced
			wf.Status.Nodes[n.ID] = *n
		}
		created := func(name string) bool { _, ok := pods.created[wf.NodeID(name)]; return ok }

		pass()
		finish(tc.node, wfv1.NodeSucceeded, false)
		pass()
		if created(tc.hook) {
			t.Errorf("%s: the handler started before its node's result arrived", tc.sentence)
		}
		finish(tc.node, wfv1.NodeSucceeded, true)
		pass()
		if !created(tc.hook) || created(tc.next) {
			t.Errorf("%s: after the node: handler started %v (want true), next started %v (want false)", tc.sentence, created(tc.hook), created(tc.next))
		}
		if h := p0(wf, tc.hook); h == nil || h.NodeFlag == nil || !h.NodeFlag.Hooked {
			t.Errorf("%s: the handler node is not flagged as hooked: %+v", tc.sentence, h)
		}
		finish(tc.hook, wfv1.NodeFailed, true)
		pass()
		if !created(tc.next) {
			t.Errorf("%s: what follows never started after the handler ended (a failed handler changes nothing)", tc.sentence)
		}
	}
}
