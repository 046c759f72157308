package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// editor is a client for a user who may get and update workflows in the env's namespace, as argo's CLI
// and server users with `update workflows` may. The Workflow CRD has no status subresource: the whole
// object, annotations and status included, is theirs to write.
func (e *env) editor(user string) versioned.Interface {
	e.t.Helper()
	return versioned.NewForConfigOrDie(e.Grant(cp.Config(), user, rbacv1.PolicyRule{
		APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"get", "update"}}))
}

// forgeRecords rewrites workflow name as editor, through argo's types, with records in the annotation
// mirror of the write-ahead record (naming the workflow's own UID, as the controller writes it).
func (e *env) forgeRecords(editor versioned.Interface, name string, records []map[string]string) {
	e.t.Helper()
	data, err := json.Marshal(records)
	if err != nil {
		e.t.Fatal(err)
	}
	workflows := editor.ArgoprojV1alpha1().Workflows(e.Namespace)
	err = wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		wf, err := workflows.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if wf.Annotations == nil {
			wf.Annotations = map[string]string{}
		}
		wf.Annotations[extstatus.AnnotationAppliedActions] = string(data)
		wf.Annotations[extstatus.AnnotationMirrorsOf] = string(wf.UID)
		_, err = workflows.Update(ctx, wf, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil // the controller wrote meanwhile
		}
		return err == nil, err
	})
	if err != nil {
		e.t.Fatalf("forging the action records of %s: %v", name, err)
	}
}

// Issue #44 item 3: the write-ahead record is bounded at 100 and was pruned only by a pass that also wrote
// something else, so a suspended workflow never drained action 101 onwards.
func TestAHundredAndFiftyActionsAtOnceAllGetTheirOutcomeWhileTheWorkflowWaits(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(fmt.Sprintf(approval, "many"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "many[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	// Created while no controller runs, so one drain meets all 150.
	e.stopController()
	var names []string
	for i := range 150 {
		names = append(names, e.create(fmt.Sprintf("suspend-%03d", i), v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend}).Name)
	}
	e.startController(envOptions{})
	for _, n := range names {
		if a := e.waitAction(n); a.Status.Phase != v1alpha1.PhaseSucceeded {
			t.Errorf("action %s = %s/%s %q, want Succeeded", n, a.Status.Phase, a.Status.Reason, a.Status.Message)
		}
	}
	if n := harness.NodeByName(e.stored(wf.Name), "many[0].approve"); n.Phase != wfv1.NodeRunning {
		t.Errorf("approve = %s, want still waiting: the actions only suspended the workflow", n.Phase)
	}
}

// Issue #44 items 3 and 11(c): a workflow's editor forged write-ahead records in its annotation mirror
// while the controller was down. 150 of them held the bounded record, so real actions waited for ever; one
// naming a pending Terminate made it report Succeeded/Applied while the workflow ran on to Succeeded.
func TestRecordsAWorkflowEditorForgedNeitherBlockNorStandForRealActions(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		fillers  int  // forged records of actions that do not exist
		forgeFor bool // a forged Succeeded record for the pending Terminate
	}{
		{sentence: "150 forged records do not hold back a real Suspend and Terminate", fillers: 150},
		{sentence: "a forged Succeeded record of a pending Terminate does not stand for its effect", forgeFor: true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			hold := make(chan struct{})
			defer close(hold)
			e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
			mallory := e.editor("mallory")
			wf := e.submitRunningPod("forged")
			e.stopController()
			suspend := e.create("real-suspend", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionSuspend})
			terminate := e.create("real-terminate", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionTerminate,
				Terminate: &v1alpha1.TerminateParameters{Message: "stop it"}})
			var forged []map[string]string
			if tc.forgeFor {
				forged = append(forged, map[string]string{"uid": string(terminate.UID), "name": terminate.Name, "outcome": "Succeeded", "reason": actions.ReasonApplied})
			}
			for i := range tc.fillers {
				forged = append(forged, map[string]string{"uid": fmt.Sprintf("00000000-0000-0000-0000-%012d", i), "name": "filler", "outcome": "Succeeded"})
			}
			e.forgeRecords(mallory, wf.Name, forged)
			e.startController(envOptions{})

			expectOutcome(t, e.waitAction(suspend.Name), v1alpha1.PhaseSucceeded, actions.ReasonApplied)
			got := e.waitAction(terminate.Name)
			expectOutcome(t, got, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
			if got.Status.Message != "workflow terminating: stop it" {
				t.Errorf("terminate's outcome message = %q, want the one of its real application", got.Status.Message)
			}
			// The pod is still held: only the Terminate (the kubelet enforcing its deadline) can end it.
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != "Stopped with strategy 'Terminate': stop it" {
				t.Errorf("workflow = %s %q, want Failed by the Terminate", done.Status.Phase, done.Status.Message)
			}
			e.WaitEvent("Workflow", wf.Name, actions.ReasonRecordIgnored)
			if n := e.Metric("wfguard_action_records_ignored_total", nil); n != float64(len(forged)) {
				t.Errorf("wfguard_action_records_ignored_total = %v, want %d (each forged record once)", n, len(forged))
			}
		})
	}
}
