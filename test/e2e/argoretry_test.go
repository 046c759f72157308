package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// exitScript runs each pod's main container as its command says ("... exit N") and reports output
// parameter out as "code N, run K", K counting the pods of the node: a rerun's outputs are told from the
// first run's.
type exitScript struct {
	mu   sync.Mutex
	runs map[string]int // node ID -> pods run
}

func (s *exitScript) script() simnode.Script {
	s.runs = map[string]int{}
	return simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		code := 0
		if args := mainArgs(info.Pod); len(args) > 0 {
			if f := strings.Fields(args[len(args)-1]); len(f) == 2 && f[0] == "exit" {
				code, _ = strconv.Atoi(f[1])
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.runs[info.NodeID]++
		return simnode.Behavior{ExitCode: int32(code),
			Parameters: map[string]string{"out": fmt.Sprintf("code %d, run %d", code, s.runs[info.NodeID])}}
	}}
}

// codeSteps runs step prepare, then step run, which exits with workflow parameter code; a wait for a
// task result that never comes ends in seconds, so a rerun judged by the previous run's result fails fast.
const codeSteps = `
metadata:
  name: %s
  annotations: {wfguard.io/task-result-timeout: 5s}
spec:
  entrypoint: main
  arguments: {parameters: [{name: code, value: "1"}]}
  templates:
  - name: main
    steps:
    - - {name: prepare, template: exit, arguments: {parameters: [{name: code, value: "0"}]}}
    - - {name: run, template: exit, arguments: {parameters: [{name: code, value: "{{workflow.parameters.code}}"}]}}
  - name: exit
    inputs: {parameters: [{name: code}]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
    container: {image: alpine, command: [sh, -c, "exit {{inputs.parameters.code}}"]}
`

// wantOut checks node's output parameter out.
func wantOut(t *testing.T, wf *wfv1.Workflow, node, want string) {
	t.Helper()
	if got := outputParam(harness.NodeByName(wf, node), "out"); got != want {
		t.Errorf("%s's output = %q, want %q", node, got, want)
	}
}

// runCodeSteps runs codeSteps as name (with code as the workflow parameter) to its completion, which must
// be phase, and waits until the controller deleted its task results.
func (e *env) runCodeSteps(name, code string, phase wfv1.WorkflowPhase) *wfv1.Workflow {
	e.t.Helper()
	manifest := strings.Replace(fmt.Sprintf(codeSteps, name), `value: "1"}]}`, `value: "`+code+`"}]}`, 1)
	done := e.WaitCompleted(e.Submit(manifest).Name)
	if done.Status.Phase != phase {
		e.t.Fatalf("first run = %s, want %s\n%s", done.Status.Phase, phase, harness.Describe(done))
	}
	e.waitResultsDeleted()
	e.waitSecondAfter(done.Status.FinishedAt) // its results were created before it finished
	return done
}

// waitSecondAfter waits until the clock is past the second of t: objects created from then on have a later
// creationTimestamp (1 s precision) than one created at t, as a retry made minutes after a failure has. The
// merge ignores a result created before its pod only when the two seconds differ.
func (e *env) waitSecondAfter(t metav1.Time) {
	e.t.Helper()
	next := t.Truncate(time.Second).Add(time.Second)
	err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
		return !time.Now().Before(next), nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// argoRetry runs argo's retry of wf with args and returns the generation argo's update gave the workflow,
// as argo-client prints it: every later status write raises it (the Workflow CRD has no status subresource).
func (e *env) argoRetry(wf *wfv1.Workflow, args ...string) int64 {
	e.t.Helper()
	retried, err := strconv.ParseInt(e.argoClient(append(args, "retry", wf.Name)...), 10, 64)
	if err != nil {
		e.t.Fatalf("argo-client retry printed no generation: %v", err)
	}
	return retried
}

// waitRetried waits until the workflow retried at generation retried completed again, which must be
// Succeeded.
func (e *env) waitRetried(name string, retried int64) *wfv1.Workflow {
	e.t.Helper()
	done := e.WaitFor(name, "completed again", 30*time.Second, func(wf *wfv1.Workflow) bool {
		return wf.Generation > retried && wf.Status.Phase.Completed()
	})
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		e.t.Fatalf("after argo's retry = %s %q, want Succeeded\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	return done
}

// waitResultsDeleted waits until no task result of the namespace is left: wfguard deletes a completed
// workflow's results, as argo does.
func (e *env) waitResultsDeleted() {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, harness.DefaultTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		e.t.Fatalf("the completed workflow's task results were not deleted: %v", err)
	}
}

// argo's own retry (argo retry -p, the UI's Retry button: workflow/util.FormulateRetryWorkflow, then the
// server deletes the failed pods and updates the workflow) runs the failed step again with the new
// parameter, and the workflow succeeds with the rerun's outputs.
func TestArgosRetryRerunsTheFailedStepWithNewParameters(t *testing.T) {
	var s exitScript
	e := newEnv(t, envOptions{script: s.script()})
	failed := e.runCodeSteps("argo-retry", "1", wfv1.WorkflowFailed)

	done := e.waitRetried(failed.Name, e.argoRetry(failed, "-p", "code=0"))
	wantOut(t, done, "argo-retry[1].run", "code 0, run 2")     // the rerun's
	wantOut(t, done, "argo-retry[0].prepare", "code 0, run 1") // argo's retry keeps succeeded steps
}

// argo's retry of a succeeded workflow with --restart-successful and a node field selector reruns the
// selected step and what follows it; each rerun node takes its own new result.
func TestArgosRetryRestartsTheSelectedSuccessfulStep(t *testing.T) {
	var s exitScript
	e := newEnv(t, envOptions{script: s.script()})
	succeeded := e.runCodeSteps("argo-restart", "0", wfv1.WorkflowSucceeded)

	done := e.waitRetried(succeeded.Name, e.argoRetry(succeeded, "--restart-successful", "--node-field-selector", "displayName=run"))
	wantOut(t, done, "argo-restart[1].run", "code 0, run 2") // the rerun's
}

// argo's memoized resubmit copies a failed workflow's succeeded steps into a new workflow and runs the
// failed one again there, with the new parameter.
func TestArgosMemoizedResubmitRerunsTheFailedStep(t *testing.T) {
	var s exitScript
	e := newEnv(t, envOptions{script: s.script()})
	failed := e.runCodeSteps("argo-memo", "1", wfv1.WorkflowFailed)

	name := e.argoClient("--memoized", "-p", "code=0", "resubmit", failed.Name)
	done := e.WaitCompleted(name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("resubmitted workflow = %s %q, want Succeeded\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	wantOut(t, done, name+"[1].run", "code 0, run 1") // the resubmitted workflow's own run
	if n := harness.NodeByName(done, name+"[0].prepare"); n == nil || n.Phase != wfv1.NodeSkipped {
		t.Errorf("prepare = %v, want the memoized copy of the first run (Skipped)", n)
	}
}

// A workflow completed with its task results still there (before wfguard deleted them at completion, or a
// crash between the completion and the deletion) is retried by argo all the same: the failed node's result
// of the first run is deleted before its pod is created again.
func TestArgosRetryOfAWorkflowThatKeptItsResultsRerunsTheFailedStep(t *testing.T) {
	var s exitScript
	e := newEnv(t, envOptions{script: s.script()})
	failed := e.runCodeSteps("argo-kept", "1", wfv1.WorkflowFailed)
	// With the controller down, put back the failed node's finalized result of the first run, as a
	// workflow completed before this version kept it.
	e.stopController()
	run := harness.NodeByName(failed, "argo-kept[1].run")
	kept := &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Name: run.ID,
			Labels: map[string]string{"workflows.argoproj.io/workflow": failed.Name, "workflows.argoproj.io/report-outputs-completed": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: wfv1.SchemeGroupVersion.String(), Kind: "Workflow",
				Name: failed.Name, UID: failed.UID}}},
		NodeResult: wfv1.NodeResult{Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("code 1, run 1")}}}},
	}
	results := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace)
	old, err := results.Create(t.Context(), kept, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // kept indeed (a controller that does not delete them)
		old, err = results.Get(t.Context(), run.ID, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	e.waitSecondAfter(old.CreationTimestamp)
	retried := e.argoRetry(failed, "-p", "code=0")
	e.startController(envOptions{})

	done := e.waitRetried(failed.Name, retried)
	wantOut(t, done, "argo-kept[1].run", "code 0, run 2") // the rerun's, not the kept "code 1, run 1"
	if r, err := results.Get(t.Context(), run.ID, metav1.GetOptions{}); err == nil && r.UID == old.UID {
		t.Errorf("the first run's result is still there")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
