//go:build realnode

package e2ereal_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
)

// env is one test's namespace, with the executor role bound to its default ServiceAccount (as an install
// does) and a wfguard controller for it in this process.
type env struct {
	*harness.Workflows
	t    *testing.T
	ctrl *harness.Controller
	// results keeps what argoexec wrote: the controller deletes a completed workflow's results, as argo does.
	results *resultLog
}

// resultLog is the last version of each task result of a namespace, as a watch saw it, by name.
type resultLog struct {
	mu   sync.Mutex
	last map[string]*wfv1.WorkflowTaskResult
}

// watchResults records every task result written in the env's namespace from now until the test ends.
func (e *env) watchResults() {
	e.t.Helper()
	w, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("watching task results: %v", err)
	}
	e.results = &resultLog{last: map[string]*wfv1.WorkflowTaskResult{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*wfv1.WorkflowTaskResult); ok && ev.Type != watch.Deleted {
				e.results.mu.Lock()
				e.results.last[r.Name] = r.DeepCopy()
				e.results.mu.Unlock()
			}
		}
	}()
	e.t.Cleanup(func() {
		w.Stop()
		<-done
	})
}

// envFor is the env's handle on namespace ns: real pods take seconds each on this machine, and a
// failed wait shows the pods.
func envFor(t *testing.T, ns string) *env {
	e := &env{t: t, Workflows: harness.NewWorkflows(t, cp.Config(), ns)}
	e.Timeout, e.Diagnose = 3*time.Minute, e.describePods
	e.watchResults()
	return e
}

func newEnv(t *testing.T, opts controller.Options) *env {
	t.Helper()
	if unfit != "" {
		t.Skip(unfit)
	}
	ns := harness.Namespace(t, cp.Config(), "real")
	e := envFor(t, ns)
	harness.BindExecutorRole(t, cp.Config(), ns)
	opts.Namespace, opts.StatusFinalizer = ns, true
	opts.Validate, opts.Logger = controller.ArgoValidator(e.Argo), harness.Logger(t)
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	e.ctrl = harness.StartController(t, cp.Config(), opts)
	return e
}

func (e *env) describePods() string {
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%s phase=%s finalizers=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Finalizers)
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s ready=%v state=%+v\n", s.Name, s.Ready, s.State)
		}
	}
	return b.String()
}

// logs is what a container of the pod printed, read through the apiserver from the real kubelet.
func (e *env) logs(pod *corev1.Pod, container string) string {
	e.t.Helper()
	stream, err := e.Kube.CoreV1().Pods(e.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(e.t.Context())
	if err != nil {
		e.t.Fatalf("reading the logs of %s/%s: %v", pod.Name, container, err)
	}
	defer stream.Close()
	data, err := io.ReadAll(stream)
	if err != nil {
		e.t.Fatalf("reading the logs of %s/%s: %v", pod.Name, container, err)
	}
	return string(data)
}

// programLogs is the container's logs without the emissary's log lines (argoexec
// logs "sub-process exited" with argo=true on the same stream, ordered by time against the program's); the
// emissary's own error ("Error: exit status 1") still follows what the program printed.
func (e *env) programLogs(pod *corev1.Pod, container string) string {
	e.t.Helper()
	var kept []string
	for _, line := range strings.SplitAfter(e.logs(pod, container), "\n") {
		if line != "" && !strings.Contains(line, " argo=true") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

// taskResult is the WorkflowTaskResult argoexec wrote for the node (named after the node ID), as last
// written: the controller deleted it when the workflow completed.
func (e *env) taskResult(wf *wfv1.Workflow, nodeName string) *wfv1.WorkflowTaskResult {
	e.t.Helper()
	n := e.Node(wf, nodeName)
	e.results.mu.Lock()
	defer e.results.mu.Unlock()
	r := e.results.last[n.ID]
	if r == nil {
		e.t.Fatalf("no task result of %s (%s) was written", nodeName, n.ID)
	}
	return r
}

// waitFinalizersReleased waits until no pod of the namespace keeps the status finalizer.
func (e *env) waitFinalizersReleased() {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if len(p.Finalizers) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("pods keep their finalizers: %v\n%s", err, e.describePods())
	}
}
