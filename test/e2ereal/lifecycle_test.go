//go:build realnode

package e2ereal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
)

// A step that exits 1 fails its node with the real exit code and its successor never starts; a retried
// step that fails once succeeds on its second attempt.
func TestRealExecutorReportsAFailingStepAndARetrySucceeds(t *testing.T) {
	e := newEnv(t, controller.Options{})
	failing := e.Submit(`
metadata: {name: failing}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: fail, template: fail}
    - - {name: after, template: fail}
  - name: fail
    container: {image: busybox:1.35, command: [sh, -c, 'echo failing; exit 1']}
`)
	retried := e.Submit(`
metadata: {name: retried}
spec:
  entrypoint: flaky
  templates:
  - name: flaky
    retryStrategy: {limit: "2", retryPolicy: Always}
    container: {image: busybox:1.35, command: [sh, -c, 'test {{retries}} -ge 1']}
`)
	done := e.WaitCompleted(failing.Name)
	if done.Status.Phase != wfv1.WorkflowFailed {
		t.Errorf("failing: phase %s, want Failed\n%s", done.Status.Phase, harness.Describe(done))
	}
	fail := e.Node(done, "failing[0].fail")
	if fail.Phase != wfv1.NodeFailed || !strings.Contains(fail.Message, "exit code 1") {
		t.Errorf("failing[0].fail = %s %q, want Failed with exit code 1", fail.Phase, fail.Message)
	}
	for _, n := range done.Status.Nodes {
		if n.DisplayName == "after" {
			t.Errorf("the successor of a failed step started: %s %s", n.Name, n.Phase)
		}
	}
	if got := e.programLogs(e.PodOf(done, "failing[0].fail"), "main"); !strings.HasPrefix(got, "failing\n") {
		t.Errorf("the failing step printed %q", got)
	}

	done = e.WaitCompleted(retried.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("retried: phase %s, want Succeeded\n%s", done.Status.Phase, harness.Describe(done))
	}
	attempts := map[string]wfv1.NodePhase{}
	for _, n := range done.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			attempts[n.Name] = n.Phase
		}
	}
	want := map[string]wfv1.NodePhase{"retried(0)": wfv1.NodeFailed, "retried(1)": wfv1.NodeSucceeded}
	if len(attempts) != len(want) || attempts["retried(0)"] != want["retried(0)"] || attempts["retried(1)"] != want["retried(1)"] {
		t.Errorf("attempts = %v, want %v\n%s", attempts, want, harness.Describe(done))
	}
	e.waitFinalizersReleased()
}

// An exit handler runs after the workflow's main part failed and sees the failure.
func TestRealExecutorRunsTheExitHandler(t *testing.T) {
	e := newEnv(t, controller.Options{})
	wf := e.Submit(`
metadata: {name: exit-handler}
spec:
  entrypoint: fail
  onExit: report
  templates:
  - name: fail
    container: {image: busybox:1.35, command: [sh, -c, 'exit 3']}
  - name: report
    container: {image: busybox:1.35, command: [sh, -c, 'echo "workflow {{workflow.status}}"']}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowFailed {
		t.Errorf("phase %s, want Failed\n%s", done.Status.Phase, harness.Describe(done))
	}
	if n := e.Node(done, "exit-handler"); n.Phase != wfv1.NodeFailed || !strings.Contains(n.Message, "exit code 3") {
		t.Errorf("main node = %s %q, want Failed with exit code 3", n.Phase, n.Message)
	}
	handler := e.Node(done, "exit-handler.onExit")
	if handler.Phase != wfv1.NodeSucceeded {
		t.Errorf("exit handler = %s %q, want Succeeded", handler.Phase, handler.Message)
	}
	if got := e.programLogs(e.PodOf(done, "exit-handler.onExit"), "main"); !strings.HasPrefix(got, "workflow Failed\n") {
		t.Errorf("the exit handler printed %q, want it to start with %q", got, "workflow Failed")
	}
	e.waitFinalizersReleased()
}

// Stop and Terminate, requested through WorkflowActions while a long step runs: argoexec kills the main
// container, the workflow ends Failed with argo's message, and Stop (not Terminate) runs the exit handler.
func TestRealExecutorStopsAndTerminatesRunningPods(t *testing.T) {
	for _, tc := range []struct {
		action      string
		message     string
		exitHandler bool
	}{
		{v1alpha1.ActionStop, "Stopped with strategy 'Stop'", true},
		{v1alpha1.ActionTerminate, "Stopped with strategy 'Terminate'", false},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e := newEnv(t, controller.Options{})
			name := strings.ToLower(tc.action) + "-me"
			wf := e.Submit(`
metadata: {name: ` + name + `}
spec:
  entrypoint: long
  onExit: cleanup
  templates:
  - name: long
    container: {image: busybox:1.35, command: [sh, -c, 'echo started; sleep 600']}
  - name: cleanup
    container: {image: busybox:1.35, command: [sh, -c, 'echo cleanup']}
`)
			running := e.WaitFor(wf.Name, "ran its main container", time.Minute, func(wf *wfv1.Workflow) bool {
				return mainRunning(e, wf, name)
			})
			begin := time.Now()
			e.act(name, v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: wf.Name}, Action: tc.action})
			done := e.WaitCompleted(running.Name)
			t.Logf("%s: workflow completed %s after the action", tc.action, time.Since(begin).Round(time.Millisecond))
			if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != tc.message {
				t.Errorf("workflow = %s %q, want Failed %q\n%s", done.Status.Phase, done.Status.Message, tc.message, harness.Describe(done))
			}
			pod := e.waitPodDone(done, name)
			for _, s := range pod.Status.ContainerStatuses {
				if s.Name == "main" && (s.State.Terminated == nil || s.State.Terminated.ExitCode == 0) {
					t.Errorf("main container = %+v, want killed (terminated, non-zero exit)", s.State)
				}
			}
			ranHandler := harness.NodeByName(done, name+".onExit") != nil
			if ranHandler != tc.exitHandler {
				t.Errorf("exit handler ran = %v, want %v\n%s", ranHandler, tc.exitHandler, harness.Describe(done))
			}
			e.waitFinalizersReleased()
		})
	}
}

// mainRunning reports whether the node's pod runs its main container.
func mainRunning(e *env, wf *wfv1.Workflow, nodeName string) bool {
	n := harness.NodeByName(wf, nodeName)
	if n == nil {
		return false
	}
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.Annotations["workflows.argoproj.io/node-id"] != n.ID {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "main" && s.State.Running != nil {
				return true
			}
		}
	}
	return false
}

// waitPodDone waits for the node's pod to reach a final phase and returns it.
func (e *env) waitPodDone(wf *wfv1.Workflow, nodeName string) *corev1.Pod {
	e.t.Helper()
	pod := e.PodOf(wf, nodeName)
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		e.t.Fatalf("pod %s never ended: %v\n%s", pod.Name, err, e.describePods())
	}
	return pod
}

// act creates a WorkflowAction and waits for its terminal status, failing unless it Succeeded.
func (e *env) act(name string, spec v1alpha1.WorkflowActionSpec) *v1alpha1.WorkflowAction {
	e.t.Helper()
	c, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		e.t.Fatal(err)
	}
	actions := c.Namespace(e.Namespace)
	if _, err := actions.Create(e.t.Context(), &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
		metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating action %s: %v", name, err)
	}
	var got *v1alpha1.WorkflowAction
	err = wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		a, err := actions.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = a
		return a.Status.Terminal(), nil
	})
	if err != nil {
		e.t.Fatalf("action %s never ended: %v", name, err)
	}
	if got.Status.Phase != v1alpha1.PhaseSucceeded {
		e.t.Fatalf("action %s = %+v, want Succeeded", name, got.Status)
	}
	return got
}
