package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/test/simnode"
)

const heldWorkflow = `
metadata: {name: held}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`

func TestAChangeThatDecidesNothingWaitsForTheWindowButCompletionIsWrittenAtOnce(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, envOptions{coalesce: time.Hour, script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.submit(heldWorkflow)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var pod corev1.Pod
	touches := 0
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, nil
		}
		pod = pods.Items[0]
		if e.metric("wfguard_workflow_persist_total", map[string]string{"outcome": "deferred"}) >= 1 {
			return true, nil
		}
		// The pod's own events wait for the window too; a metadata change makes the controller look now.
		touches++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.wfguard.io/touch":"%d"}}}`, touches)
		_, err = e.argo.ArgoprojV1alpha1().Workflows(e.ns).Patch(ctx, wf.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return false, err
	}); err != nil {
		t.Fatalf("the pod never ran with a deferred pass: %v", err)
	}

	stored, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(ctx, wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := stored.Status.Nodes[stored.Name]
	if node.Phase != wfv1.NodePending || node.HostNodeName != "" {
		t.Fatalf("while the window is open the stored node should still be Pending without a host, got %s on %q (pod %s is %s)\n%s",
			node.Phase, node.HostNodeName, pod.Name, pod.Status.Phase, describe(stored))
	}

	close(hold)
	done := e.waitCompleted(wf.Name)
	node = done.Status.Nodes[done.Name]
	if done.Status.Phase != wfv1.WorkflowSucceeded || node.Phase != wfv1.NodeSucceeded || node.HostNodeName == "" || node.Outputs == nil || node.Outputs.ExitCode == nil {
		t.Fatalf("completion should be written at once, with the deferred host and exit code:\n%s", describe(done))
	}
}

func TestAShortWindowStillShowsARunningNodeWhileItRuns(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{coalesce: 100 * time.Millisecond, script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.submit(heldWorkflow)
	e.waitFor(wf.Name, "its node Running on its host", time.Minute, func(wf *wfv1.Workflow) bool {
		n := wf.Status.Nodes[wf.Name]
		return n.Phase == wfv1.NodeRunning && n.HostNodeName != ""
	})
}
