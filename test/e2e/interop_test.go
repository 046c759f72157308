package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/test/harness"
)

// argoClient runs argo's own client code against the test's namespace (harness.ArgoClient).
func (e *env) argoClient(args ...string) string {
	e.t.Helper()
	return harness.ArgoClient(e.t, cp.Kubeconfig, e.Namespace, args...)
}

// A suspension accepted from an action survives argo's clients rewriting the whole Workflow through argo's
// types (which drop status.suspended and status.appliedActions), and argo's own resume lifts it: nothing
// applied twice, nothing lost.
func TestASuspendActionSurvivesArgosClientsAndArgosResumeLiftsIt(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "interop"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "interop[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	s := e.act("suspend", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
	expectOutcome(t, s, v1alpha1.PhaseSucceeded, actions.ReasonApplied)

	// argo's server relabelling the workflow: a Get and a whole-object Update through argo's typed client.
	e.argoClient("--label", "team=blue", "label", wf.Name)
	relabelled := e.WaitFor(wf.Name, "relabelled", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Labels["team"] == "blue" })
	if relabelled.Spec.Suspend == nil || !*relabelled.Spec.Suspend {
		t.Fatalf("after argo's write spec.suspend = %v: the accepted suspension is not where argo's types keep it", relabelled.Spec.Suspend)
	}
	// Approve the node only: the workflow-level suspension must still hold the next step.
	r := e.act("approve", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
		Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=approve", OutputParameters: map[string]string{"answer": "yes"}}})
	expectOutcome(t, r, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	held := e.WaitFor(wf.Name, "approve resumed", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "interop[0].approve")
		return n != nil && n.Phase == wfv1.NodeSucceeded
	})
	if harness.NodeByName(held, "interop[1].after") != nil {
		t.Fatalf("a step started while the workflow was suspended: argo's write lost the suspension\n%s", harness.Describe(held))
	}
	// A second Suspend finds the suspension in place: it was not lost to argo's write.
	again := e.act("suspend-again", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
	expectOutcome(t, again, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	if !strings.Contains(again.Status.Message, "already suspended") {
		t.Errorf("a second Suspend: message %q, want it to find the workflow already suspended", again.Status.Message)
	}

	// argo's own resume (workflow/util.ResumeWorkflow) lifts it.
	e.argoClient("resume", wf.Name)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s after argo's resume\n%s", done.Status.Phase, harness.Describe(done))
	}
	if args := mainArgs(e.PodOf(done, "interop[1].after")); !strings.Contains(strings.Join(args, " "), "yes") {
		t.Errorf("after's argv = %v, want the answer supplied before argo's write", args)
	}
}
