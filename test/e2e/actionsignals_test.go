package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/test/harness"
)

// eventsOn returns "Type Reason: Message" of the Events on the object of kind and name.
func (e *env) eventsOn(kind, name string) []string {
	e.t.Helper()
	list, err := e.Kube.CoreV1().Events(e.Namespace).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message))
		}
	}
	return out
}

// TestEveryActionOutcomeWrittenHasItsEventsAndOneCount checks the wiring of the action signals: each
// outcome the controller writes produces one Event on the action, one on the workflow, and one increment of
// wfguard_workflow_actions_total with its labels, recorded by the real API server.
func TestEveryActionOutcomeWrittenHasItsEventsAndOneCount(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "signals"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "signals[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	for _, tc := range []struct {
		sentence   string
		name       string
		spec       v1alpha1.WorkflowActionSpec
		phase      v1alpha1.ActionPhase
		reason     string
		onAction   string
		onWorkflow string
	}{
		{"a Suspend is Applied with Normal Events on the action and the workflow", "suspend-1",
			v1alpha1.WorkflowActionSpec{WorkflowRef: ref("signals"), Action: v1alpha1.ActionSuspend},
			v1alpha1.PhaseSucceeded, actions.ReasonApplied,
			"Normal Applied: workflow suspended",
			"Normal WorkflowActionApplied: Suspend suspend-1: Applied (workflow suspended)"},
		{"a Resume no suspend node matches fails NothingToResume with Warning Events", "resume-none",
			v1alpha1.WorkflowActionSpec{WorkflowRef: ref("signals"), Action: v1alpha1.ActionResume,
				Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=nope"}},
			v1alpha1.PhaseFailed, actions.ReasonNothingToResume,
			"Warning NothingToResume: workflow signals has nothing suspended to resume (no suspended workflow, no active suspend node matching)",
			"Warning WorkflowActionFailed: Resume resume-none: NothingToResume (workflow signals has nothing suspended to resume (no suspended workflow, no active suspend node matching))"},
		{"an action for a missing workflow fails WorkflowNotFound with a Warning Event on the action only", "resume-nope",
			v1alpha1.WorkflowActionSpec{WorkflowRef: ref("nope"), Action: v1alpha1.ActionResume},
			v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound,
			"Warning WorkflowNotFound: workflow nope does not exist", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			labels := map[string]string{"action": tc.spec.Action, "phase": string(tc.phase), "reason": tc.reason}
			before := e.Metric("wfguard_workflow_actions_total", labels)
			total := e.Metric("wfguard_workflow_actions_total", nil)
			a := e.act(tc.name, tc.spec)
			expectOutcome(t, a, tc.phase, tc.reason)

			want := []string{tc.onAction}
			if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
				return len(e.eventsOn("WorkflowAction", tc.name)) > 0 &&
					(tc.onWorkflow == "" || contains(e.eventsOn("Workflow", "signals"), tc.onWorkflow)), nil
			}); err != nil {
				t.Fatalf("Events on the action %q, on the workflow %q: want %q and %q", e.eventsOn("WorkflowAction", tc.name), e.eventsOn("Workflow", "signals"), want, tc.onWorkflow)
			}
			if got := e.eventsOn("WorkflowAction", tc.name); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Events on the action = %q, want exactly %q", got, want)
			}
			if tc.onWorkflow != "" && count(e.eventsOn("Workflow", "signals"), tc.onWorkflow) != 1 {
				t.Errorf("Events on the workflow = %q, want %q once", e.eventsOn("Workflow", "signals"), tc.onWorkflow)
			}
			// The Events were recorded after the count: both are settled now.
			if got := e.Metric("wfguard_workflow_actions_total", labels) - before; got != 1 {
				t.Errorf("wfguard_workflow_actions_total%v rose by %v, want 1", labels, got)
			}
			if got := e.Metric("wfguard_workflow_actions_total", nil) - total; got != 1 {
				t.Errorf("wfguard_workflow_actions_total rose by %v in all, want 1", got)
			}
		})
	}
}

func contains(list []string, s string) bool { return count(list, s) > 0 }

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
