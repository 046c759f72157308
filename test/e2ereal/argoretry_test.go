//go:build realnode

package e2ereal_test

import (
	"strconv"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
)

// argo's own retry (workflow/util.FormulateRetryWorkflow, as `argo retry -p` and the UI's Retry button run
// it) of a workflow whose step failed: the real argoexec reruns the step under the same node ID, writes its
// task result again, and the workflow Succeeds with the rerun's output, the step that had succeeded kept.
func TestRealExecutorRerunsAStepArgosRetryResets(t *testing.T) {
	e := newEnv(t, controller.Options{})
	wf := e.Submit(`
metadata: {name: argo-retried}
spec:
  entrypoint: main
  arguments: {parameters: [{name: code, value: "1"}]}
  templates:
  - name: main
    steps:
    - - {name: first, template: kept}
    - - {name: second, template: report}
  - name: kept
    container:
      image: busybox:1.35
      command: [sh, -c, 'echo -n kept > /tmp/out']
    outputs:
      parameters: [{name: out, valueFrom: {path: /tmp/out}}]
  - name: report
    container:
      image: busybox:1.35
      command: [sh, -c, 'echo -n "code {{workflow.parameters.code}}" > /tmp/out; exit {{workflow.parameters.code}}']
    outputs:
      parameters: [{name: out, valueFrom: {path: /tmp/out}}]
`)
	failed := e.WaitCompleted(wf.Name)
	if failed.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("first run: phase %s, want Failed\n%s", failed.Status.Phase, harness.Describe(failed))
	}
	firstID := e.Node(failed, "argo-retried[0].first").ID

	out := harness.ArgoClient(t, cp.Kubeconfig, e.Namespace, "-p", "code=0", "retry", wf.Name)
	retried, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("argo-client retry printed %q, not the generation of its update", out)
	}
	done := e.WaitFor(wf.Name, "completed after argo's retry", 3*time.Minute, func(w *wfv1.Workflow) bool {
		return w.Generation > retried && w.Status.Phase.Completed()
	})
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("after argo's retry: phase %s %q, want Succeeded\n%s\n%s", done.Status.Phase, done.Status.Message,
			harness.Describe(done), e.describePods())
	}
	for _, tc := range []struct{ sentence, node, want string }{
		{"the failed step reran with the retry's parameter", "argo-retried[1].second", "code 0"},
		{"the step that had succeeded kept its output", "argo-retried[0].first", "kept"},
	} {
		if got := parameter(e.Node(done, tc.node).Outputs, "out"); got != tc.want {
			t.Errorf("%s: %s out = %q, want %q", tc.sentence, tc.node, got, tc.want)
		}
	}
	if id := e.Node(done, "argo-retried[0].first").ID; id != firstID {
		t.Errorf("the succeeded step's node was replaced (%s, was %s)", id, firstID)
	}
	e.waitFinalizersReleased()
}
