//go:build realnode

package e2ereal_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/test/harness"
)

// The seed scenario with the real executor: argoexec writes and completes its task result, but the
// controller's task-result informer hears of it 30 s late. The producer must never be Succeeded without
// its output, and the consumer must get it: no output lost.
func TestRealExecutorsOutputSurvivesALateTaskResultWatch(t *testing.T) {
	var delayed *faultinject.DelayedWatch
	e := newEnv(t, controller.Options{WrapListWatch: func(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
		if resource != "workflowtaskresults" {
			return lw
		}
		delayed = faultinject.DelayWatchEvents(lw, 30*time.Second, nil)
		return delayed
	}})
	stop := e.watchNode("late-results", "late-results[0].produce")
	wf := e.Submit(`
metadata: {name: late-results}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {parameters: [{name: out, value: "{{steps.produce.outputs.parameters.out}}"}]}
  - name: produce
    container: {image: busybox:1.35, command: [sh, -c, 'echo -n v1 > /tmp/out']}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: consume
    inputs: {parameters: [{name: out}]}
    container: {image: busybox:1.35, command: [sh, -c, 'echo "consumed {{inputs.parameters.out}}"']}
`)
	done := e.WaitCompleted(wf.Name)
	states := stop()
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase %s, want Succeeded\n%s\n%s", done.Status.Phase, harness.Describe(done), e.describePods())
	}
	for _, n := range states {
		if n.Phase == wfv1.NodeSucceeded && parameter(n.Outputs, "out") != "v1" {
			t.Errorf("I1: produce was Succeeded with outputs %v", n.Outputs)
		}
	}
	if got := parameter(e.Node(done, "late-results[0].produce").Outputs, "out"); got != "v1" {
		t.Errorf("produce's output out = %q, want v1", got)
	}
	if got := e.programLogs(e.PodOf(done, "late-results[1].consume"), "main"); !strings.HasPrefix(got, "consumed v1\n") {
		t.Errorf("consume printed %q, want %q", got, "consumed v1")
	}
	if delayed.Delayed() == 0 {
		t.Errorf("the informer fault never delayed an event: the test proved nothing")
	}
	e.waitFinalizersReleased()
}

// watchNode records every state of the named node the workflow's watch shows, until the returned func.
func (e *env) watchNode(workflow, node string) (stop func() []wfv1.NodeStatus) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.t.Context())
	w, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", workflow).String()})
	if err != nil {
		cancel()
		e.t.Fatalf("watching workflow %s: %v", workflow, err)
	}
	var mu sync.Mutex
	var seen []wfv1.NodeStatus
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			wf, ok := ev.Object.(*wfv1.Workflow)
			if !ok || extstatus.InflateNodes(wf) != nil {
				continue
			}
			for _, n := range wf.Status.Nodes {
				if n.Name == node {
					mu.Lock()
					seen = append(seen, n)
					mu.Unlock()
				}
			}
		}
	}()
	return func() []wfv1.NodeStatus {
		w.Stop()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}
