package e2e_test

import (
	"context"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/faultinject"
)

const oneStep = `
metadata: {name: one-step}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`

func TestACrashBeforeTheFinalizerReleaseLeavesThePodHeldUntilTheRestartReleasesIt(t *testing.T) {
	points := faultinject.NewPoints()
	points.Crash(faultinject.PointBeforeFinalizerRelease, 1)
	e := newEnv(t, envOptions{points: points})
	wf := e.Submit(oneStep)
	if err := points.WaitHit(t.Context(), faultinject.PointBeforeFinalizerRelease, 1); err != nil {
		t.Fatal(err)
	}
	e.stopController() // returns once the crashed controller has stopped
	done := e.WaitCompleted(wf.Name)
	pod := e.PodOf(done, wf.Name)
	if !slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
		t.Fatalf("the crash happened before the release, yet the pod lost its finalizer (releases: persisted %v orphaned %v deleting %v; point hits %d)",
			e.Metric("wfguard_pod_finalizers_released_total", map[string]string{"reason": "persisted"}),
			e.Metric("wfguard_pod_finalizers_released_total", map[string]string{"reason": "orphaned"}),
			e.Metric("wfguard_pod_finalizers_released_total", map[string]string{"reason": "deleting"}),
			points.Hits(faultinject.PointBeforeFinalizerRelease))
	}
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("the persisted workflow is %s, want Succeeded (recorded before the crash)", done.Status.Phase)
	}
	e.startController(envOptions{})
	err := wait.PollUntilContextTimeout(t.Context(), 25*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && !slices.Contains(p.Finalizers, common.FinalizerPodStatus), nil
	})
	if err != nil {
		t.Fatalf("the restarted controller did not release the finalizer: %v", err)
	}
}

func TestPausedWorkersHoldEveryWorkflowUntilResumed(t *testing.T) {
	points := faultinject.NewPoints()
	points.Pause(faultinject.PointWorker)
	e := newEnv(t, envOptions{points: points})
	wf := e.Submit(oneStep)
	if err := points.WaitHit(t.Context(), faultinject.PointWorker, 1); err != nil {
		t.Fatal(err)
	}
	got, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" {
		t.Fatalf("a workflow was reconciled while every worker was paused: %s", got.Status.Phase)
	}
	points.Resume(faultinject.PointWorker)
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("after resuming: %s", done.Status.Phase)
	}
}
