package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const singleStep = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`

func TestAPassThatPanicsErrorsItsWorkflowWhileAnotherWorkflowCompletes(t *testing.T) {
	e := newEnv(t, envOptions{hooks: controller.Hooks{BeforePersist: func(key string) {
		if strings.HasSuffix(key, "/panics") {
			panic("injected: a bug in this workflow's pass")
		}
	}}})
	panics := e.Submit(manifest(singleStep, "panics"))
	healthy := e.Submit(manifest(singleStep, "healthy"))

	done := e.WaitCompleted(panics.Name)
	want := "the controller panicked reconciling this workflow: injected: a bug in this workflow's pass"
	if done.Status.Phase != wfv1.WorkflowError || done.Status.Message != want || done.Labels[common.LabelKeyCompleted] != "true" {
		t.Errorf("the panicking workflow should end Error with the panic message %q, got %s %q (completed label %q)",
			want, done.Status.Phase, done.Status.Message, done.Labels[common.LabelKeyCompleted])
	}
	if ok := e.WaitCompleted(healthy.Name); ok.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the other workflow should succeed in the same controller, got %s\n%s", ok.Status.Phase, harness.Describe(ok))
	}
	if got := e.Metric("wfguard_reconcile_total", map[string]string{"result": "panic"}); got != 1 {
		t.Errorf("wfguard_reconcile_total{result=panic} = %v, want 1 (the Error write ends the workflow's passes)", got)
	}
	if got := harness.Messages(e.WaitEvent("", panics.Name, controller.ReasonReconcilePanicked)); len(got) != 1 || got[0] != want {
		t.Errorf("%s events = %q, want one with %q", controller.ReasonReconcilePanicked, got, want)
	}
	// The pass created the pod before it panicked: the errored workflow still releases it (I5, I10).
	e.waitReleased(panics.Name)
}

func TestAPassBlockedPastItsDeadlineIsAbandonedAndTheWorkflowLaterCompletes(t *testing.T) {
	points := faultinject.NewPoints()
	points.Pause(faultinject.PointAfterWorkflowPersist)
	hold := make(chan struct{}) // the pod runs until the block ends, so the workflow cannot finish before
	e := newEnv(t, envOptions{points: points, passDeadline: time.Second, script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.Submit(manifest(singleStep, "blocked"))

	// Two hits: the first pass was abandoned at its deadline and the key was taken again.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := points.WaitHit(ctx, faultinject.PointAfterWorkflowPersist, 2); err != nil {
		t.Fatal(err)
	}
	if got := e.Metric("wfguard_reconcile_total", map[string]string{"result": "deadline_exceeded"}); got < 1 {
		t.Errorf("wfguard_reconcile_total{result=deadline_exceeded} = %v, want ≥ 1", got)
	}
	if stored, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{}); err != nil || stored.Status.Phase.Completed() {
		t.Fatalf("the workflow should still run while its passes are blocked: %v\n%s", err, harness.Describe(stored))
	}
	e.WaitEvent("", wf.Name, controller.ReasonReconcileDeadlineExceeded)

	points.Resume(faultinject.PointAfterWorkflowPersist)
	close(hold)
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("after the block ends the workflow should succeed, got %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	e.waitReleased(wf.Name)
}

// waitReleased waits until no pod of the workflow holds the status finalizer.
func (e *env) waitReleased(name string) {
	e.t.Helper()
	if err := wait.PollUntilContextTimeout(e.t.Context(), 25*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + name})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		for _, p := range pods.Items {
			if slices.Contains(p.Finalizers, common.FinalizerPodStatus) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		e.t.Errorf("a pod of workflow %s still holds the status finalizer: %v", name, err)
	}
}
