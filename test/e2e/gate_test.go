package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func TestANodeWaitsForItsResultAndKeepsItsFinalizerUntilThenTheRestIsReleased(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "v1"}, Fault: simnode.Fault{NeverFinalize: true}},
		"consume": {},
	}}})
	wf := e.Submit(manifest(producerConsumer, "gated", "10m"))
	waiting := e.WaitFor(wf.Name, "waiting for the task result", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "gated[0].produce")
		return n != nil && strings.HasPrefix(n.Message, "waiting for task result (since ")
	})
	produce := harness.NodeByName(waiting, "gated[0].produce")
	if produce.Phase != wfv1.NodeRunning {
		t.Errorf("a node whose pod succeeded without a complete result is %s, want Running", produce.Phase)
	}
	if pod := e.PodOf(waiting, "gated[0].produce"); pod.Status.Phase != corev1.PodSucceeded || !slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
		t.Errorf("pod = %s finalizers %v, want Succeeded and still holding the status finalizer", pod.Status.Phase, pod.Finalizers)
	}
	if harness.NodeByName(waiting, "gated[1].consume") != nil {
		t.Fatalf("the successor started before the result was complete (I2):\n%s", harness.Describe(waiting))
	}

	// The executor's final report arrives (an SRE's `kubectl label ... report-outputs-completed=true`).
	patch := `{"metadata":{"labels":{"` + common.LabelKeyReportOutputsCompleted + `":"true"}}}`
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), produce.ID, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	if args := mainArgs(e.PodOf(done, "gated[1].consume")); !slices.Contains(args, "v1") {
		t.Errorf("consume argv = %v, want the produced value v1", args)
	}
	// I5: no pod keeps the finalizer once its node's final state is persisted.
	err := wait.PollUntilContextTimeout(t.Context(), 25*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if slices.Contains(p.Finalizers, common.FinalizerPodStatus) {
				return false, nil
			}
		}
		return len(pods.Items) == 2, nil
	})
	if err != nil {
		t.Errorf("pods kept the status finalizer after the workflow completed: %v", err)
	}
}
