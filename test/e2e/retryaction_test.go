package e2e_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// firstRunFails is a node script where the first pod of each node of template "flaky" fails and every later
// one succeeds; runs counts the pods each node ran.
type firstRunFails struct {
	mu   sync.Mutex
	pods map[string]map[types.UID]bool // node ID -> pods seen
}

func (f *firstRunFails) script() simnode.Script {
	f.pods = map[string]map[types.UID]bool{}
	return simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.pods[info.NodeID] == nil {
			f.pods[info.NodeID] = map[types.UID]bool{}
		}
		f.pods[info.NodeID][info.Pod.UID] = true
		if code, err := strconv.Atoi(info.Pod.Annotations[simnode.AnnotationExitCode]); err == nil {
			return simnode.Behavior{ExitCode: int32(code)}
		}
		if info.Template.Name == "flaky" && len(f.pods[info.NodeID]) == 1 {
			return simnode.Behavior{ExitCode: 1}
		}
		return simnode.Behavior{}
	}}
}

// runs is how many pods the node ran.
func (f *firstRunFails) runs(nodeID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pods[nodeID])
}

const flakyAfterSetup = `
metadata: {name: %s}
spec:
  entrypoint: main
  onExit: notify
  templates:
  - name: main
    steps:
    - - {name: setup, template: setup}
    - - {name: flaky, template: flaky}
  - name: setup
    container: {image: alpine, command: ["true"]}
  - name: flaky
    container: {image: alpine, command: ["true"]}
  - name: notify
    container: {image: alpine, command: ["true"]}
`

func retrySpec(name string, p *v1alpha1.RetryParameters) v1alpha1.WorkflowActionSpec {
	return v1alpha1.WorkflowActionSpec{WorkflowRef: ref(name), Action: v1alpha1.ActionRetry, Retry: p}
}

// allowRetryRewrites installs config/policy's admission policy for Retries that rewrite their workflow, for
// every namespace as shipped, and waits until the controller takes it as in force: without it such a Retry
// fails RetryOverridesNotAuthorized (test/trust shows both sides).
func (e *env) allowRetryRewrites() {
	e.t.Helper()
	harness.InstallPolicy(e.t, cp.Config(), "config/policy/retry-overrides-need-update.yaml", "")
	harness.WaitPolicySettled(e.t, cp.Config(), actions.RetryOverridesPolicy)
}

func TestARetryRunsTheFailedStepAgainAndKeepsWhatSucceeded(t *testing.T) {
	var node firstRunFails
	e := newEnv(t, envOptions{script: node.script()})
	wf := e.Submit(fmt.Sprintf(flakyAfterSetup, "flaky"))
	failed := e.WaitCompleted(wf.Name)
	if failed.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("first run = %s, want Failed\n%s", failed.Status.Phase, harness.Describe(failed))
	}
	setup, flaky, exit := harness.NodeByName(failed, "flaky[0].setup"), harness.NodeByName(failed, "flaky[1].flaky"), harness.NodeByName(failed, "flaky.onExit")
	oldFlakyPod := e.PodOf(failed, "flaky[1].flaky")
	// A pod another identity labelled with the workflow's name is not the retry's to delete.
	foreign := e.createForeignPod(wf.Name)

	retry := e.act("retry-1", retrySpec(wf.Name, nil))
	expectOutcome(t, retry, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("retried run = %s %q, want Succeeded\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	if got := harness.NodeByName(done, "flaky[0].setup"); got.ID != setup.ID || !got.FinishedAt.Equal(&setup.FinishedAt) || node.runs(setup.ID) != 1 {
		t.Errorf("setup ran %d times and finished %v (before %v): a retry keeps what succeeded", node.runs(setup.ID), got.FinishedAt, setup.FinishedAt)
	}
	if got := harness.NodeByName(done, "flaky[1].flaky"); got.ID != flaky.ID || got.Phase != wfv1.NodeSucceeded || node.runs(flaky.ID) != 2 {
		t.Errorf("flaky = %s after %d runs, want Succeeded after 2 (same node ID)", got.Phase, node.runs(flaky.ID))
	}
	if node.runs(exit.ID) != 2 {
		t.Errorf("the exit handler ran %d times, want 2: a retried workflow ends again", node.runs(exit.ID))
	}
	if pod := e.PodOf(done, "flaky[1].flaky"); pod.UID == oldFlakyPod.UID {
		t.Errorf("flaky's pod is the first run's: the controller must delete it before running the node again")
	}
	if _, err := e.Kube.CoreV1().Pods(e.Namespace).Get(t.Context(), foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the retry deleted a pod that only claimed the workflow's label: %v", err)
	}
	if done.Labels["workflows.argoproj.io/action"] != "Retry" || done.Labels["workflows.argoproj.io/actor"] != "alice" {
		t.Errorf("actor labels = %v, want action=Retry actor=alice", done.Labels)
	}
	e.WaitEvent("", wf.Name, controller.ReasonWorkflowRetried)
	e.WaitEvent("", wf.Name, controller.ReasonRetryCleanedUp)
	if st := e.extStatus(wf.Name); st["retryCleanupSince"] != nil || st["appliedActions"] != nil {
		t.Errorf("status after the retried run = %v, want the cleanup closed and the record gone", st)
	}
	if got := e.Metric("wfguard_workflow_actions_total", map[string]string{"action": "Retry", "phase": "Succeeded", "reason": "Applied"}); got != 1 {
		t.Errorf("Retry Applied counted %v times, want 1", got)
	}
	again := e.act("retry-2", retrySpec(wf.Name, nil))
	expectOutcome(t, again, v1alpha1.PhaseFailed, actions.ReasonNothingToRetry)
}

// createForeignPod creates a pod labelled with the workflow's name but owned by nothing.
func (e *env) createForeignPod(workflow string) *corev1.Pod {
	e.t.Helper()
	pod, err := e.Kube.CoreV1().Pods(e.Namespace).Create(e.t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign", Labels: map[string]string{common.LabelKeyWorkflow: workflow},
			Annotations: map[string]string{common.AnnotationKeyNodeID: "foreign"}},
		Spec: corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pod
}

func TestARetryWithRestartSuccessfulRunsTheSelectedStepsAgain(t *testing.T) {
	var node firstRunFails
	e := newEnv(t, envOptions{script: node.script()})
	e.allowRetryRewrites()
	wf := e.Submit(`
metadata: {name: rerun}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: one, template: work}
    - - {name: two, template: work}
    - - {name: three, template: other}
  - name: work
    container: {image: alpine, command: ["true"]}
  - name: other
    container: {image: alpine, command: ["true"]}
`)
	first := e.WaitCompleted(wf.Name)
	if first.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("first run = %s", first.Status.Phase)
	}
	plain := e.act("plain", retrySpec(wf.Name, nil))
	expectOutcome(t, plain, v1alpha1.PhaseFailed, actions.ReasonNothingToRetry)
	retry := e.act("rerun-two", retrySpec(wf.Name, &v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "displayName=two"}))
	expectOutcome(t, retry, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("rerun = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	for name, want := range map[string]int{"rerun[0].one": 1, "rerun[1].two": 2, "rerun[2].three": 2} {
		if got := node.runs(harness.NodeByName(done, name).ID); got != want {
			t.Errorf("%s ran %d times, want %d (the selected step and what follows it run again)", name, got, want)
		}
	}
}

func TestARetryOverridesAParameterAndRefusesAnUndeclaredOne(t *testing.T) {
	var node firstRunFails
	e := newEnv(t, envOptions{script: node.script()})
	e.allowRetryRewrites()
	wf := e.Submit(`
metadata: {name: params}
spec:
  entrypoint: main
  arguments: {parameters: [{name: code, value: "3"}]}
  templates:
  - name: main
    inputs: {parameters: [{name: code}]}
    metadata: {annotations: {simnode.wfguard.io/exit-code: "{{inputs.parameters.code}}"}}
    container: {image: alpine, command: [sh, -c, "exit {{inputs.parameters.code}}"]}
`)
	if first := e.WaitCompleted(wf.Name); first.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("first run = %s, want Failed (exit 3)", first.Status.Phase)
	}
	undeclared := e.act("undeclared", retrySpec(wf.Name, &v1alpha1.RetryParameters{Parameters: []string{"cod=0"}}))
	expectOutcome(t, undeclared, v1alpha1.PhaseFailed, actions.ReasonInvalidParameter)
	if got, _ := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{}); got.Status.Phase != wfv1.WorkflowFailed {
		t.Errorf("a refused retry changed the workflow to %s", got.Status.Phase)
	}
	retry := e.act("fixed", retrySpec(wf.Name, &v1alpha1.RetryParameters{Parameters: []string{"code=0"}}))
	expectOutcome(t, retry, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded || done.Spec.Arguments.Parameters[0].Value.String() != "0" {
		t.Errorf("retried run = %s with code %v, want Succeeded with code 0\n%s", done.Status.Phase, done.Spec.Arguments.Parameters, harness.Describe(done))
	}
}

func TestARetryOfARunningOrMissingWorkflowIsRefused(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.Submit(oneStep)
	e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == wfv1.WorkflowRunning })
	running := e.act("too-early", retrySpec(wf.Name, nil))
	expectOutcome(t, running, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotCompleted)
	missing := e.act("nobody", retrySpec("no-such-workflow", nil))
	expectOutcome(t, missing, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound)
}

func TestARetryAndATerminateApplyInTheirOrder(t *testing.T) {
	cases := []struct {
		name      string
		first     string // action created first
		outcomes  map[string]string
		wantPhase wfv1.WorkflowPhase
	}{
		{"a Terminate after a Retry terminates the retried run", v1alpha1.ActionRetry,
			map[string]string{v1alpha1.ActionRetry: actions.ReasonApplied, v1alpha1.ActionTerminate: actions.ReasonApplied}, wfv1.WorkflowFailed},
		{"a Terminate before a Retry finds the workflow completed; the Retry runs it", v1alpha1.ActionTerminate,
			map[string]string{v1alpha1.ActionTerminate: actions.ReasonWorkflowCompleted, v1alpha1.ActionRetry: actions.ReasonApplied}, wfv1.WorkflowSucceeded},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var node firstRunFails
			e := newEnv(t, envOptions{script: node.script()})
			wf := e.Submit(fmt.Sprintf(flakyAfterSetup, fmt.Sprintf("race-%d", i)))
			e.WaitCompleted(wf.Name)
			e.stopController() // both actions reach the same pass
			second := v1alpha1.ActionTerminate
			if tc.first == v1alpha1.ActionTerminate {
				second = v1alpha1.ActionRetry
			}
			a := e.create("a-"+strings.ToLower(tc.first), v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: tc.first})
			b := e.create("b-"+strings.ToLower(second), v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: second})
			e.startController(envOptions{})
			for _, got := range []*v1alpha1.WorkflowAction{e.waitAction(a.Name), e.waitAction(b.Name)} {
				if got.Status.Reason != tc.outcomes[got.Spec.Action] {
					t.Errorf("%s = %s %q, want %s", got.Spec.Action, got.Status.Reason, got.Status.Message, tc.outcomes[got.Spec.Action])
				}
			}
			// The Retry's outcome follows the write that made the workflow Pending: completed now is completed again.
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != tc.wantPhase {
				t.Errorf("workflow = %s %q, want %s\n%s", done.Status.Phase, done.Status.Message, tc.wantPhase, harness.Describe(done))
			}
		})
	}
}

func TestARetryIsAppliedExactlyOnceAcrossACrashAtEachStep(t *testing.T) {
	for _, point := range []string{faultinject.PointAfterWorkflowPersist, faultinject.PointBeforeActionStatus, faultinject.PointDuringRetryCleanup} {
		t.Run("a crash at "+point, func(t *testing.T) {
			var node firstRunFails
			points := faultinject.NewPoints()
			e := newEnv(t, envOptions{script: node.script(), points: points})
			wf := e.Submit(fmt.Sprintf(flakyAfterSetup, "crash-"+point))
			failed := e.WaitCompleted(wf.Name)
			flaky := harness.NodeByName(failed, wf.Name+"[1].flaky")
			// The first run's result, unless the completion's deletion took it already.
			first, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Get(t.Context(), flaky.ID, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("the first run's task result of flaky: %v", err)
			}
			if err != nil {
				first = nil
			}
			// The first run's passes hit the point too: arm it with no controller running, so the hit that
			// crashes is the retry's.
			e.stopController()
			hits := points.Hits(point)
			points.Crash(point, 1)
			retry := e.create("retry", retrySpec(wf.Name, nil))
			e.startController(envOptions{points: points})
			if err := points.WaitHit(t.Context(), point, hits+1); err != nil {
				t.Fatal(err)
			}
			e.stopController()
			e.startController(envOptions{points: points})
			expectOutcome(t, e.waitAction(retry.Name), v1alpha1.PhaseSucceeded, actions.ReasonApplied)
			done := e.WaitFor(wf.Name, "Succeeded", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == wfv1.WorkflowSucceeded })
			if got := node.runs(flaky.ID); got != 2 {
				t.Errorf("flaky ran %d times, want 2: the retry is applied once whatever the crash", got)
			}
			if n := harness.NodeByName(done, wf.Name+"[1].flaky"); n.Phase != wfv1.NodeSucceeded {
				t.Errorf("flaky = %s", n.Phase)
			}
			// The first run's result is gone (deleted at the first completion, or by the retry before the node
			// ran again): any result left is the second run's.
			r, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Get(t.Context(), flaky.ID, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if err == nil && first != nil && r.UID == first.UID {
				t.Errorf("flaky's task result is the first run's: it must go before the node runs again")
			}
		})
	}
}

// argo's resubmit copies every annotation of the workflow it resubmits (FormulateResubmitWorkflow, argo
// v3.7.9): a copy taken while a Retry's cleanup was open carries the cleanup's mark and the Retry's record
// in their annotation mirrors. The new workflow has no previous run to clean up and applied no action.
func TestAWorkflowResubmittedMidRetryInheritsNeitherTheCleanupNorTheRecord(t *testing.T) {
	points := faultinject.NewPoints()
	// A cleanup that ran would fail, and with its mark past the bound it would fail the workflow.
	points.Fail(faultinject.PointDuringRetryCleanup, 0)
	e := newEnv(t, envOptions{points: points})
	completed := e.WaitCompleted(e.Submit(oneStep).Name)
	// With the controller down nothing rewrites the source: give it the mirrors wfguard writes while a
	// Retry's cleanup is open, begun an hour ago.
	e.stopController()
	workflows := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace)
	source, err := workflows.Get(t.Context(), completed.Name, metav1.GetOptions{}) // the controller's last write
	if err != nil {
		t.Fatal(err)
	}
	begun := metav1.NewTime(time.Now().Add(-time.Hour))
	mirrors, err := extstatus.ToUnstructured(source, extstatus.Extensions{RetryCleanupSince: &begun,
		AppliedActions: []extstatus.AppliedAction{{UID: "retry-uid", Name: "retry-1", Outcome: "Succeeded", Reason: "Applied"}}})
	if err != nil {
		t.Fatal(err)
	}
	source.Annotations = mirrors.GetAnnotations() // as wfguard's encoder writes them, naming the source
	if _, err := workflows.Update(t.Context(), source, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// bob may read and create workflows in the namespace, as a user of argo's CLI; nothing else.
	e.Grant(cp.Config(), "bob", rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group}, Resources: []string{"workflows"}, Verbs: []string{"create", "get"}})
	name := e.argoClient("--as", "bob", "resubmit", source.Name)
	copied, err := workflows.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{extstatus.AnnotationRetryCleanup, extstatus.AnnotationAppliedActions, extstatus.AnnotationMirrorsOf} {
		if copied.Annotations[key] == "" {
			t.Fatalf("the resubmitted workflow does not carry %s: the test no longer models argo's resubmit", key)
		}
	}
	if err := workflows.Delete(t.Context(), source.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err) // only the copy is left to reconcile
	}
	e.startController(envOptions{points: points})

	done := e.WaitCompleted(name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("resubmitted workflow = %s %q, want Succeeded\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	if n := points.Hits(faultinject.PointDuringRetryCleanup); n != 0 {
		t.Errorf("the resubmitted workflow ran a retry cleanup %d times", n)
	}
	for _, key := range []string{extstatus.AnnotationRetryCleanup, extstatus.AnnotationAppliedActions, extstatus.AnnotationMirrorsOf} {
		if v, ok := done.Annotations[key]; ok {
			t.Errorf("the resubmitted workflow kept the copied %s=%q", key, v)
		}
	}
	if st := e.extStatus(name); st["retryCleanupSince"] != nil || st["appliedActions"] != nil {
		t.Errorf("status of the resubmitted workflow = %v, want no cleanup and no record", st)
	}
}
