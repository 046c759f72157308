package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func (e *env) actionClient() *v1alpha1.NamespacedClient {
	e.t.Helper()
	c, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Namespace(e.Namespace)
}

// act creates an action and waits for its terminal status (the sync contract, by hand).
func (e *env) act(name string, spec v1alpha1.WorkflowActionSpec) *v1alpha1.WorkflowAction {
	e.t.Helper()
	a := e.create(name, spec)
	return e.waitAction(a.Name)
}

func (e *env) create(name string, spec v1alpha1.WorkflowActionSpec) *v1alpha1.WorkflowAction {
	e.t.Helper()
	a, err := e.actionClient().Create(e.t.Context(), &v1alpha1.WorkflowAction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"workflows.argoproj.io/creator": "alice"}},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating action %s: %v", name, err)
	}
	return a
}

func (e *env) waitAction(name string) *v1alpha1.WorkflowAction {
	e.t.Helper()
	var got *v1alpha1.WorkflowAction
	err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		a, err := e.actionClient().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = a
		return a.Status.Terminal(), nil
	})
	if err != nil {
		e.t.Fatalf("action %s never reached a terminal phase (status %+v): %v", name, got.Status, err)
	}
	return got
}

func (e *env) extStatus(name string) map[string]any {
	e.t.Helper()
	u, err := dynamic.NewForConfigOrDie(cp.Config()).Resource(wfv1.SchemeGroupVersion.WithResource("workflows")).
		Namespace(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	return status
}

func expectOutcome(t *testing.T, a *v1alpha1.WorkflowAction, phase v1alpha1.ActionPhase, reason string) {
	t.Helper()
	if a.Status.Phase != phase || a.Status.Reason != reason || a.Status.CompletionTime == nil {
		t.Errorf("action %s (%s) = %s/%s %q, want %s/%s with a completion time", a.Name, a.Spec.Action,
			a.Status.Phase, a.Status.Reason, a.Status.Message, phase, reason)
	}
}

func ref(name string) v1alpha1.WorkflowRef { return v1alpha1.WorkflowRef{Name: name} }

const approval = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - {name: after, template: report, arguments: {parameters: [{name: answer, value: "{{steps.approve.outputs.parameters.answer}}"}]}}
  - name: approve
    suspend: {}
    outputs: {parameters: [{name: answer, valueFrom: {supplied: {}}}]}
  - name: report
    inputs: {parameters: [{name: answer}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.answer}}"]}
`

func TestSuspendAndResumeActionsAreAppliedInsideTheReconcile(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "approval"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "approval[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})

	early := e.act("resume-nothing", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("nope"), Action: v1alpha1.ActionResume})
	expectOutcome(t, early, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound)

	s := e.act("suspend-1", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
	expectOutcome(t, s, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	if st := e.extStatus(wf.Name); st["suspended"] != true {
		t.Errorf("status.suspended = %v, want true", st["suspended"])
	}
	again := e.act("suspend-2", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
	expectOutcome(t, again, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	if want := "workflow " + wf.Name + " was already suspended; nothing changed"; again.Status.Message != want {
		t.Errorf("a second Suspend: message %q, want %q", again.Status.Message, want)
	}

	bad := e.act("resume-bad-selector", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
		Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "no-operator"}})
	expectOutcome(t, bad, v1alpha1.PhaseFailed, actions.ReasonInvalidNodeFieldSelector)
	unknown := e.act("rerun", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: "Rerun"})
	expectOutcome(t, unknown, v1alpha1.PhaseFailed, actions.ReasonUnknownAction)

	// Resume the approve node with an output, as `argo resume --node-field-selector` would.
	r := e.act("resume-approve", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
		Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=approve", OutputParameters: map[string]string{"answer": "yes"}}})
	expectOutcome(t, r, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	// The workflow-level suspension still holds the next step until a plain Resume lifts it.
	held := e.WaitFor(wf.Name, "approve resumed", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "approval[0].approve")
		return n != nil && n.Phase == wfv1.NodeSucceeded
	})
	if harness.NodeByName(held, "approval[1].after") != nil {
		t.Errorf("a step started while the workflow was suspended")
	}
	lift := e.act("resume-all", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume})
	expectOutcome(t, lift, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	if args := mainArgs(e.PodOf(done, "approval[1].after")); !strings.Contains(strings.Join(args, " "), "yes") {
		t.Errorf("after's argv = %v, want the supplied answer yes", args)
	}
	if done.Labels["workflows.argoproj.io/actor"] != "alice" || done.Labels["workflows.argoproj.io/action"] != "Resume" {
		t.Errorf("actor labels = %v", done.Labels)
	}
	if st := e.extStatus(wf.Name); st["appliedActions"] != nil {
		t.Errorf("appliedActions not pruned after the outcomes were written: %v", st["appliedActions"])
	}
	late := e.act("resume-late", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume})
	expectOutcome(t, late, v1alpha1.PhaseFailed, actions.ReasonWorkflowCompleted)
	e.WaitEvent("", wf.Name, actions.EventReasonApplied)
}

func TestResumeBeforeTheSuspendNodeExistsIsRefusedNotSilentlyAccepted(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"ok": {Hold: hold}}}})
	wf := e.Submit(`
metadata: {name: not-yet}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: first, template: ok}], [{name: approve, template: approve}]]
  - name: ok
    container: {image: alpine, command: [sleep, "3600"]}
  - name: approve
    suspend: {}
`)
	e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == wfv1.WorkflowRunning })
	a := e.act("early", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume})
	expectOutcome(t, a, v1alpha1.PhaseFailed, actions.ReasonNothingToResume)
}

func TestStopAndTerminateActions(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "stop-node"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "stop-node[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	none := e.act("stop-none", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionStop,
		Stop: &v1alpha1.StopParameters{NodeFieldSelector: "displayName=nope", Message: "x"}})
	expectOutcome(t, none, v1alpha1.PhaseFailed, actions.ReasonNothingToStop)
	stop := e.act("stop-approve", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionStop,
		Stop: &v1alpha1.StopParameters{NodeFieldSelector: "displayName=approve", Message: "rejected by bob"}})
	expectOutcome(t, stop, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	done := e.WaitCompleted(wf.Name)
	if n := harness.NodeByName(done, "stop-node[0].approve"); n.Phase != wfv1.NodeFailed || n.Message != "rejected by bob" {
		t.Errorf("approve = %s %q, want Failed \"rejected by bob\"", n.Phase, n.Message)
	}

	other := e.Submit(fmt.Sprintf(approval, "terminated"))
	e.WaitFor(other.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, "terminated[0].approve") != nil })
	// Both actions reach the same drain: create them while the controller is stopped.
	e.stopController()
	t1 := e.create("terminate-1", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(other.Name), Action: v1alpha1.ActionTerminate,
		Terminate: &v1alpha1.TerminateParameters{Message: "bad input data"}})
	t2 := e.create("terminate-2", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(other.Name), Action: v1alpha1.ActionTerminate,
		Terminate: &v1alpha1.TerminateParameters{Message: "a second reason"}})
	e.startController(envOptions{})
	// No dedup: a second Terminate succeeds as a no-op, and its message does not replace the first.
	first, second := e.waitAction(t1.Name), e.waitAction(t2.Name)
	expectOutcome(t, first, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	expectOutcome(t, second, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	if first.Status.Message != "workflow terminating: bad input data" || !strings.Contains(second.Status.Message, "already shutting down") {
		t.Errorf("outcome messages %q and %q, want the first to carry the reason and the second to change nothing", first.Status.Message, second.Status.Message)
	}
	term := e.WaitCompleted(other.Name)
	if term.Status.Phase != wfv1.WorkflowFailed || term.Status.Message != "Stopped with strategy 'Terminate': bad input data" {
		t.Errorf("terminated = %s %q, want Failed with the requester's reason", term.Status.Phase, term.Status.Message)
	}
	if st := e.extStatus(other.Name); st["shutdown"] != "Terminate" {
		t.Errorf("status.shutdown = %v, want Terminate", st["shutdown"])
	}
}

func TestActionsAreAppliedInCreationOrder(t *testing.T) {
	// The workflow's pod runs until the burst is over, so no action can find it completed: a Resume only
	// lifts the workflow-level suspension (there is no suspend node to finish), whichever pass applies it.
	hold := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.submitRunningPod("burst")
	// Alternating Suspend/Resume only all succeed when applied in order (creationTimestamp, then name): out
	// of order, a Resume finds nothing suspended or a Suspend finds the workflow already suspended.
	var names []string
	for i := range 20 {
		kind := v1alpha1.ActionSuspend
		if i%2 == 1 {
			kind = v1alpha1.ActionResume
		}
		names = append(names, e.create(fmt.Sprintf("burst-%02d", i), v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: kind}).Name)
	}
	for _, n := range names {
		expectOutcome(t, e.waitAction(n), v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	}
	if st := e.extStatus(wf.Name); st["suspended"] != false {
		t.Errorf("after the last Resume the workflow should not be suspended, status.suspended = %v", st["suspended"])
	}
	close(hold)
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
}

func TestAUIDPinnedActionNeverTouchesASameNamedReplacement(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "pinned"))
	e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, "pinned[0].approve") != nil })
	a := e.act("pinned-old", v1alpha1.WorkflowActionSpec{
		WorkflowRef: v1alpha1.WorkflowRef{Name: wf.Name, UID: types.UID("00000000-0000-0000-0000-000000000001")},
		Action:      v1alpha1.ActionTerminate})
	expectOutcome(t, a, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound)
	if got, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{}); err != nil || got.Status.Phase != wfv1.WorkflowRunning {
		t.Errorf("the workflow was touched by an action pinned to another UID: %v %v", got.Status.Phase, err)
	}
}

// suspendRecorded submits an approval workflow named name, suspends it with action actionName and waits
// until the suspension and its write-ahead record are persisted together (I4).
func (e *env) suspendRecorded(name, actionName string) (*wfv1.Workflow, *v1alpha1.WorkflowAction) {
	e.t.Helper()
	wf := e.Submit(fmt.Sprintf(approval, name))
	e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, name+"[0].approve") != nil })
	a := e.create(actionName, v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
	err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		st := e.extStatus(wf.Name)
		return st["suspended"] == true && st["appliedActions"] != nil, nil
	})
	if err != nil {
		e.t.Fatalf("the action's effect and record were not persisted together: %v", err)
	}
	return wf, a
}

func TestACrashBetweenTheWorkflowWriteAndTheActionWriteIsReportedExactlyOnce(t *testing.T) {
	// This controller "dies" after every workflow write that recorded an action, before the action write.
	hooks := controller.Hooks{BeforeActionStatus: func(string) bool { return false }}
	e := newEnv(t, envOptions{hooks: hooks})
	_, a := e.suspendRecorded("crash", "suspend-once")
	e.stopController()
	if got, _ := e.actionClient().Get(t.Context(), a.Name, metav1.GetOptions{}); got.Status.Terminal() {
		t.Fatalf("the crash point did not hold back the action write")
	}
	e.startController(envOptions{})
	// Re-applying Suspend would report "already suspended"; the replay must report what was recorded instead.
	replayed := e.waitAction(a.Name)
	expectOutcome(t, replayed, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	if replayed.Status.Message != "workflow suspended" {
		t.Errorf("replayed outcome message = %q, want the recorded %q", replayed.Status.Message, "workflow suspended")
	}
}

func TestAnActionAppliedToAWorkflowDeletedBeforeItsOutcomeWasWrittenReportsItsRecord(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		recreate bool
		// rewrite: argo's CLI rewrote the workflow through argo's types before the deletion, which keeps
		// only the record's annotation mirror, without its message.
		rewrite     bool
		wantMessage string
	}{
		{"a deleted workflow's action is reported from the record its deletion carried", false, false, "workflow suspended"},
		{"and it is never applied again to a new workflow of the same name", true, false, "workflow suspended"},
		{"a record only its annotation mirror held at the deletion is reported too", false, true, extstatus.LostMessage},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			// The controller may write outcomes only once the suspended workflow is gone from the server: the
			// record that holds the outcome is then only in the deletion the controller watched.
			var first atomic.Value
			argo := dynamic.NewForConfigOrDie(cp.Config()).Resource(wfv1.SchemeGroupVersion.WithResource("workflows"))
			hooks := controller.Hooks{BeforeActionStatus: func(key string) bool {
				ns, name, _ := strings.Cut(key, "/")
				u, err := argo.Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
				return apierrors.IsNotFound(err) || (err == nil && first.Load() != nil && u.GetUID() != first.Load())
			}}
			e := newEnv(t, envOptions{hooks: hooks})
			wf, a := e.suspendRecorded("deleted", "suspend-then-deleted")
			first.Store(wf.UID)
			if got, _ := e.actionClient().Get(t.Context(), a.Name, metav1.GetOptions{}); got.Status.Terminal() {
				t.Fatalf("the outcome was written while the workflow existed: %+v", got.Status)
			}
			if tc.rewrite {
				e.deleteWithOnlyTheRecordsMirror(wf.Name)
			} else if err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Delete(t.Context(), wf.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.recreate {
				harness.Until(t, "the deleted workflow gone", 30*time.Second, func(ctx context.Context) bool {
					_, err := argo.Namespace(e.Namespace).Get(ctx, wf.Name, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				})
				e.Submit(fmt.Sprintf(approval, "deleted"))
			}
			// The suspend was applied: WorkflowNotFound would say it never was (I3).
			done := e.waitAction(a.Name)
			expectOutcome(t, done, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
			if done.Status.Message != tc.wantMessage {
				t.Errorf("outcome message = %q, want %q", done.Status.Message, tc.wantMessage)
			}
			if !tc.recreate {
				return
			}
			again := e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, "deleted[0].approve") != nil })
			if again.UID == wf.UID {
				t.Fatalf("the workflow was not recreated")
			}
			if st := e.extStatus(wf.Name); st["suspended"] == true || st["appliedActions"] != nil {
				t.Errorf("the new workflow of the same name took the deleted one's action (I6): suspended %v, records %v", st["suspended"], st["appliedActions"])
			}
		})
	}
}

// deleteWithOnlyTheRecordsMirror rewrites workflow name through argo's types, as argo's CLI, server and UI
// do, which drops status.appliedActions and keeps its annotation mirror, and deletes exactly that version.
func (e *env) deleteWithOnlyTheRecordsMirror(name string) {
	e.t.Helper()
	workflows := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace)
	err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		wf, err := workflows.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if wf.Annotations[extstatus.AnnotationAppliedActions] == "" {
			return false, fmt.Errorf("workflow %s has no mirror of its record to keep", name)
		}
		rewritten, err := workflows.Update(ctx, wf, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil // the controller wrote meanwhile: rewrite its version
		}
		if err != nil {
			return false, err
		}
		// Only the rewritten version, which argo's types stored without status.appliedActions: a newer one
		// might hold the record in status again.
		rv := rewritten.ResourceVersion
		err = workflows.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		e.t.Fatalf("deleting workflow %s with only the mirror of its record: %v", name, err)
	}
}

func TestTheCRDRejectsMalformedActionsAtAdmission(t *testing.T) {
	e := newEnv(t, envOptions{})
	client := e.actionClient()
	cases := []struct {
		name string
		spec v1alpha1.WorkflowActionSpec
		want string
	}{
		{"a resume block on a Stop", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Stop", Resume: &v1alpha1.ResumeParameters{}},
			"spec.resume is only allowed with action Resume"},
		{"a terminate block on a Stop", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Stop", Terminate: &v1alpha1.TerminateParameters{Message: "m"}},
			"spec.terminate is only allowed with action Terminate"},
		{"a terminate message over 1024 bytes", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Terminate",
			Terminate: &v1alpha1.TerminateParameters{Message: strings.Repeat("m", 1025)}}, "spec.terminate.message"},
		{"two parameter blocks", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Resume",
			Resume: &v1alpha1.ResumeParameters{}, Stop: &v1alpha1.StopParameters{}}, "at most one parameter block may be set"},
		{"an empty workflowRef", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(""), Action: "Stop"}, "spec.workflowRef.name"},
		{"an empty action", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x")}, "spec.action"},
	}
	for _, tc := range cases {
		_, err := client.Create(t.Context(), &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: tc.spec}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	a := e.act("immutable", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Stop"})
	expectOutcome(t, a, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound)
	a.Spec.Action = "Terminate"
	_, err := dynamicUpdate(t, e.Namespace, a)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("changing the spec: err = %v, want immutable", err)
	}
	// A terminal outcome cannot be reset to Pending (which would let the action be applied again).
	reset := a.DeepCopy()
	reset.Status = v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhasePending}
	if _, err := e.actionClient().UpdateStatus(t.Context(), reset, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "a terminal status is final") {
		t.Errorf("resetting a terminal status: err = %v, want it refused", err)
	}
}

func dynamicUpdate(t *testing.T, ns string, a *v1alpha1.WorkflowAction) (*unstructured.Unstructured, error) {
	t.Helper()
	client := dynamic.NewForConfigOrDie(cp.Config()).Resource(v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.Resource)).Namespace(ns)
	u, err := client.Get(t.Context(), a.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, a.Spec.Action, "spec", "action")
	return client.Update(t.Context(), u, metav1.UpdateOptions{})
}

func TestFinishedActionsAreDeletedAfterTheirTTLAndPendingOnesNever(t *testing.T) {
	fake := testingclock.NewFakeClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	// The controller "crashes" before writing outcomes for workflow held, so its action stays Pending.
	gcRuns := make(chan struct{}, 100)
	hooks := controller.Hooks{
		BeforeActionStatus: func(key string) bool { return !strings.HasSuffix(key, "/held") },
		AfterActionGC:      func() { gcRuns <- struct{}{} },
	}
	// gcPass steps the clock and waits for the GC pass that tick starts.
	gcPass := func(d time.Duration) {
		for len(gcRuns) > 0 {
			<-gcRuns
		}
		fake.Step(d)
		select {
		case <-gcRuns:
		case <-time.After(30 * time.Second):
			t.Fatal("no action GC pass after the clock moved")
		}
	}
	e := newEnv(t, envOptions{clock: fake, ttl: time.Hour, hooks: hooks})
	held := e.Submit(fmt.Sprintf(approval, "held"))
	e.WaitFor(held.Name, "suspended", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, "held[0].approve") != nil })
	pending := e.create("pending", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(held.Name), Action: v1alpha1.ActionSuspend})
	finished := e.act("finished", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("absent"), Action: v1alpha1.ActionSuspend})
	expectOutcome(t, finished, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		st := e.extStatus(held.Name)
		return st["appliedActions"] != nil, nil
	})
	if err != nil {
		t.Fatal("the pending action was never recorded")
	}
	// Not yet expired: a GC pass at 59 minutes deletes nothing.
	gcPass(59 * time.Minute)
	if _, err := e.actionClient().Get(t.Context(), finished.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a finished action was deleted before its TTL: %v", err)
	}
	gcPass(2 * time.Minute)
	if _, err := e.actionClient().Get(t.Context(), finished.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the finished action outlived its TTL: %v", err)
	}
	gcPass(48 * time.Hour)
	if got, err := e.actionClient().Get(t.Context(), pending.Name, metav1.GetOptions{}); err != nil || got.Status.Terminal() {
		t.Errorf("the pending action expired or changed: %v %+v", err, got)
	}
}
