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
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
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
	wf := e.Submit(heldWorkflow)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var pod corev1.Pod
	touches := 0
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, nil
		}
		pod = pods.Items[0]
		if e.Metric("wfguard_workflow_persist_total", map[string]string{"outcome": "deferred"}) >= 1 {
			return true, nil
		}
		// The pod's own events wait for the window too; a metadata change makes the controller look now.
		touches++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.wfguard.io/touch":"%d"}}}`, touches)
		_, err = e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Patch(ctx, wf.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return false, err
	}); err != nil {
		t.Fatalf("the pod never ran with a deferred pass: %v", err)
	}

	stored, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := stored.Status.Nodes[stored.Name]
	if node.Phase != wfv1.NodePending || node.HostNodeName != "" {
		t.Fatalf("while the window is open the stored node should still be Pending without a host, got %s on %q (pod %s is %s)\n%s",
			node.Phase, node.HostNodeName, pod.Name, pod.Status.Phase, harness.Describe(stored))
	}

	close(hold)
	done := e.WaitCompleted(wf.Name)
	node = done.Status.Nodes[done.Name]
	if done.Status.Phase != wfv1.WorkflowSucceeded || node.Phase != wfv1.NodeSucceeded || node.HostNodeName == "" || node.Outputs == nil || node.Outputs.ExitCode == nil {
		t.Fatalf("completion should be written at once, with the deferred host and exit code:\n%s", harness.Describe(done))
	}
}

func TestAShortWindowStillShowsARunningNodeWhileItRuns(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{coalesce: 100 * time.Millisecond, script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.Submit(heldWorkflow)
	e.WaitFor(wf.Name, "its node Running on its host", time.Minute, func(wf *wfv1.Workflow) bool {
		n := wf.Status.Nodes[wf.Name]
		return n.Phase == wfv1.NodeRunning && n.HostNodeName != ""
	})
}

const failedBesideHeld = `
metadata: {name: failed-beside-held}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: boom, template: boom}
      - {name: held, template: held}
  - name: boom
    container: {image: alpine, command: ["false"]}
  - name: held
    container: {image: alpine, command: ["true"]}
`

// TestAResultThatCompletesAFailedNodeIsPersistedBeforeItsPodIsReleased is I5 under coalescing: a failed pod's
// node is written Failed at once, but it is fulfilled only when its result completes, a change that by itself
// looks informational. The pod may lose its finalizer only after a workflow revision records the node both
// final and synced; etcd revisions order the two streams.
func TestAResultThatCompletesAFailedNodeIsPersistedBeforeItsPodIsReleased(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{
		coalesce: time.Hour,
		script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
			"boom": {ExitCode: 1},
			"held": {Hold: hold},
		}},
		// The failed pod is seen before its (already finalized) result: the node is Failed, not yet synced.
		// The delay stays under the direct-read grace, so the cache, not a read past it, completes the node.
		wrap: func(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
			if resource != "workflowtaskresults" {
				return lw
			}
			return faultinject.DelayWatchEvents(lw, 300*time.Millisecond, nil)
		},
	})
	order := harness.WatchReleaseOrder(e.Workflows)
	wf := e.Submit(failedBesideHeld)
	failed := e.WaitFor(wf.Name, "recorded boom Failed", time.Minute, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, wf.Name+".boom")
		return n != nil && n.Phase == wfv1.NodeFailed
	})
	released, fulfilled := order.WaitReleased(t.Context(), harness.NodeByName(failed, wf.Name+".boom").ID, 30*time.Second)
	stored, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if released == 0 {
		t.Fatalf("boom's pod was never released while held ran on\n%s", harness.Describe(stored))
	}
	if fulfilled == 0 || fulfilled >= released {
		t.Errorf("I5: boom's pod lost its finalizer at revision %d, but the first revision recording boom Failed and synced is %d (0: none yet)\n%s",
			released, fulfilled, harness.Describe(stored))
	}
	if n := harness.NodeByName(stored, wf.Name+".held"); n == nil || n.Phase.Completed() {
		t.Errorf("held should still run, so nothing but boom's result decided the pass\n%s", harness.Describe(stored))
	}
	if got := e.Metric("wfguard_finalizer_released_before_persist_total", nil); got != 0 {
		t.Errorf("wfguard_finalizer_released_before_persist_total = %v, want 0", got)
	}
}
