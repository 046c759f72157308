package trust

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const approval = `
metadata: {name: approval}
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
    container: {image: alpine, command: [echo, "answer={{inputs.parameters.answer}}"]}
`

// forgedResult is a complete task result for node of wf with answer=FORGED, as an executor could write it.
func forgedResult(wf *wfv1.Workflow, instance, node string) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Name: node,
			Labels: map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyReportOutputsCompleted: "true",
				common.LabelKeyControllerInstanceID: instance},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID}}},
		NodeResult: wfv1.NodeResult{Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "answer", Value: wfv1.AnyStringPtr("FORGED")}}}},
	}
}

// Issue #14 item 2: any pod's ServiceAccount with the executor role writes a complete task result named
// after another workflow's suspend node with answer=FORGED. The approver's Resume answer wins: a result
// decides only a Pod node, and the controller warns about the one it ignored. (This is the controller's
// own check, for clusters without config/policy's admission policy; with it, the write is refused.)
func TestAForgedTaskResultNeverOverridesAnApproversAnswer(t *testing.T) {
	e := newEnv(t, envOptions{})
	harness.BindExecutorRole(t, cp.Config(), e.Namespace)
	wf := e.Submit(approval)
	e.WaitFor(wf.Name, "suspended at approve", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "approval[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	// Another workflow's pod in the namespace, by its ServiceAccount token (pod-bound).
	executor := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims("other-wf-work-123", "uid-other")))
	approveID := wf.NodeID("approval[0].approve")
	if _, err := executor.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), forgedResult(wf, e.instance, approveID), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the executor role could not create the forged result (the test needs it to): %v", err)
	}
	// The controller has seen the forged result once it warns about it, or (as before the fix) once the
	// approve node shows its outputs.
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if len(e.Events("Workflow", wf.Name, "TaskResultIgnored")) > 0 {
			return true, nil
		}
		cur, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, wf.Name, metav1.GetOptions{})
		n := harness.NodeByName(cur, "approval[0].approve")
		return err == nil && n != nil && n.Outputs != nil && len(n.Outputs.Parameters) > 0, nil
	}); err != nil {
		t.Fatalf("the controller never reacted to the forged result: %v", err)
	}

	actions, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []v1alpha1.WorkflowActionSpec{
		{WorkflowRef: v1alpha1.WorkflowRef{Name: wf.Name}, Action: v1alpha1.ActionResume,
			Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=approve", OutputParameters: map[string]string{"answer": "no"}}},
	} {
		a, err := actions.Namespace(e.Namespace).Create(t.Context(), &v1alpha1.WorkflowAction{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "resume-"}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got *v1alpha1.WorkflowAction
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err = actions.Namespace(e.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
			return err == nil && got.Status.Terminal(), nil
		}); err != nil {
			t.Fatalf("the Resume never ended: %+v", got)
		}
		if got.Status.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("Resume = %s %s %s, want Succeeded", got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
	}
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s (%s), want Succeeded", done.Status.Phase, done.Status.Message)
	}
	if n := harness.NodeByName(done, "approval[0].approve"); n == nil || n.Outputs == nil || len(n.Outputs.Parameters) != 1 || n.Outputs.Parameters[0].Value.String() != "no" {
		t.Errorf("approve's outputs = %v, want answer=no", n.Outputs)
	}
	if args := mainArgs(e.PodOf(done, "approval[1].after")); !strings.Contains(args, "answer=no") {
		t.Errorf("after ran with %q, want the approver's answer=no", args)
	}
	if msgs := harness.Messages(e.Events("Workflow", wf.Name, "TaskResultIgnored")); !strings.Contains(strings.Join(msgs, "\n"), approveID) {
		t.Errorf("TaskResultIgnored Events %q do not name %s", msgs, approveID)
	}
	if n := e.Metric("wfguard_taskresult_ignored_total", map[string]string{"reason": "not_a_pod_node"}); n < 1 {
		t.Errorf("wfguard_taskresult_ignored_total{reason=not_a_pod_node} = %v, want >= 1", n)
	}
}
