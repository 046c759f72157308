//go:build realnode

package e2ereal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
)

// A running pod deleted by someone else (kubectl delete pod): the kubelet kills its containers, the node
// ends unsuccessful with the reason, the workflow ends, and the pod, its finalizer released, goes away.
func TestRealPodDeletedFromOutsideEndsItsNode(t *testing.T) {
	e := newEnv(t, controller.Options{})
	wf := e.Submit(`
metadata: {name: deleted-pod}
spec:
  entrypoint: long
  templates:
  - name: long
    container: {image: busybox:1.35, command: [sh, -c, 'echo started; exec sleep 600']}
`)
	running := e.WaitFor(wf.Name, "ran its main container", time.Minute, func(w *wfv1.Workflow) bool {
		return mainRunning(e, w, wf.Name)
	})
	pod := e.PodOf(running, wf.Name)
	// The container runs before argoexec's emissary (its PID 1) handles signals: a SIGTERM in that window
	// finds the default action, which PID 1 ignores, and Go's runtime exits 2 instead. The program's first
	// line shows the emissary started it, so it forwards the kubelet's SIGTERM from then on.
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := e.Kube.CoreV1().Pods(e.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		return err == nil && strings.Contains(string(out), "started"), nil
	}); err != nil {
		t.Fatalf("the main program of %s never printed that it started: %v\n%s", pod.Name, err, e.describePods())
	}
	if err := e.Kube.CoreV1().Pods(e.Namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", pod.Name, err)
	}
	done := e.WaitCompleted(wf.Name)
	n := e.Node(done, wf.Name)
	t.Logf("after the pod's deletion: workflow %s %q, node %s %q", done.Status.Phase, done.Status.Message, n.Phase, n.Message)
	// The kubelet stops the containers with SIGTERM: argoexec reports the main container's 143.
	if done.Status.Phase != wfv1.WorkflowFailed || n.Phase != wfv1.NodeFailed || !strings.Contains(n.Message, "exit code 143") {
		t.Errorf("workflow %s, node %s %q; want both Failed with exit code 143\n%s", done.Status.Phase, n.Phase, n.Message, harness.Describe(done))
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the deleted pod stays: %v\n%s", err, e.describePods())
	}
}
