package e2e_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const producerConsumer = `
metadata: {name: %s, annotations: {wfguard.io/task-result-timeout: "%s"}}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - {name: consume, template: consume, arguments: {parameters: [{name: in, value: "{{steps.produce.outputs.parameters.out}}"}]}}
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo v1 > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: consume
    inputs: {parameters: [{name: in}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.in}}"]}
`

func manifest(format string, args ...any) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a.(string), 1)
	}
	return format
}

// watchNode records every state of a node the API server shows, to catch a transient violation.
func (e *env) watchNode(ctx context.Context, wfName, nodeName string) func() []wfv1.NodeStatus {
	e.t.Helper()
	w, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + wfName})
	if err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []wfv1.NodeStatus
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if n := harness.NodeByName(ev.Object.(*wfv1.Workflow), nodeName); n != nil {
				mu.Lock()
				seen = append(seen, *n)
				mu.Unlock()
			}
		}
	}()
	return func() []wfv1.NodeStatus {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func TestALateResultCacheNeverLetsANodeSucceedWithoutItsOutputs(t *testing.T) {
	// The seed scenario: results are written and finalized, but the controller's result informer hears of
	// them 30s late (a slow API server or etcd). The placeholder is never seen before the pod succeeds.
	var delayed *faultinject.DelayedWatch
	e := newEnv(t, envOptions{
		script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"produce": {Parameters: map[string]string{"out": "v1"}}}},
		wrap: func(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
			if resource != "workflowtaskresults" {
				return lw
			}
			delayed = faultinject.DelayWatchEvents(lw, 30*time.Second, nil)
			return delayed
		},
	})
	stop := e.watchNode(t.Context(), "late-cache", "late-cache[0].produce")
	wf := e.Submit(manifest(producerConsumer, "late-cache", "10m"))
	done := e.WaitCompleted(wf.Name)
	states := stop()
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	for _, n := range states {
		if n.Phase == wfv1.NodeSucceeded && outputParam(&n, "out") != "v1" {
			t.Errorf("I1: produce was Succeeded with outputs %v", n.Outputs)
		}
	}
	if args := mainArgs(e.PodOf(done, "late-cache[1].consume")); !slices.Contains(args, "v1") {
		t.Errorf("consume argv = %v, want v1", args)
	}
	if delayed.Delayed() == 0 {
		t.Errorf("the informer fault never delayed an event: the test proved nothing")
	}
	if got := e.Metric("wfguard_taskresult_direct_reads_total", map[string]string{"outcome": "complete"}); got < 1 {
		t.Errorf("direct reads that found a complete result = %v, want ≥ 1 (the bypass is what unblocks the node)", got)
	}
	e.WaitEvent("", wf.Name, "TaskResultReadPastCache")
}

func TestNoDirectReadsWithoutFaults(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "v1"}, ReportAfter: 200 * time.Millisecond}}}})
	wf := e.Submit(manifest(producerConsumer, "no-faults", "10m"))
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	// Results are finalized before the wait container exits, so a healthy cache delivers them within the
	// grace; a read past it would be wasted.
	if got := e.Metric("wfguard_taskresult_direct_reads_total", nil); got != 0 {
		t.Errorf("direct reads in the no-fault case = %v, want 0", got)
	}
}

func TestAResultThatNeverCompletesTimesOutLoudlyWhileOtherBranchesFinish(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"stuck": {Parameters: map[string]string{"out": "v1"}, Fault: simnode.Fault{NeverFinalize: true}},
	}}})
	wf := e.Submit(`
metadata: {name: never-final, annotations: {wfguard.io/task-result-timeout: "2s"}}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: stuck, template: stuck}
      - {name: a, template: ok}
      - {name: b, template: ok, depends: a}
  - name: stuck
    container: {image: alpine, command: [sh, -c, "echo v1 > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: ok
    container: {image: alpine, command: ["true"]}
`)
	done := e.WaitCompleted(wf.Name)
	stuck := harness.NodeByName(done, "never-final.stuck")
	if stuck.Phase != wfv1.NodeError || !strings.HasPrefix(stuck.Message, "TaskResultTimeout: ") ||
		!strings.Contains(stuck.Message, "never finalized") {
		t.Errorf("stuck = %s %q, want Error TaskResultTimeout saying the result was never finalized", stuck.Phase, stuck.Message)
	}
	if done.Status.Phase != wfv1.WorkflowError {
		t.Errorf("workflow = %s, want Error\n%s", done.Status.Phase, harness.Describe(done))
	}
	b := harness.NodeByName(done, "never-final.b")
	if b.Phase != wfv1.NodeSucceeded || b.FinishedAt.After(stuck.FinishedAt.Time) {
		t.Errorf("the other branch did not finish while stuck waited: b %s at %s, stuck timed out at %s", b.Phase, b.FinishedAt, stuck.FinishedAt)
	}
	e.WaitEvent("", wf.Name, "TaskResultTimeout")
	// The counter follows the write that completed the workflow, which a watcher may see first.
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return e.Metric("wfguard_taskresult_timeouts_total", nil) >= 1, nil
	}); err != nil {
		t.Fatalf("the timeout was never counted: %v", err)
	}
	if got := e.Metric("wfguard_taskresult_timeouts_total", nil); got != 1 {
		t.Errorf("timeouts = %v, want 1", got)
	}
}

// A long timeout in these cases proves the explicit rule, not the timeout, ended the wait.
func TestExecutorFailuresEndInTheirDocumentedStateWithoutWaitingForTheTimeout(t *testing.T) {
	cases := []struct {
		name      string
		behavior  simnode.Behavior
		wantPhase wfv1.NodePhase
		wantMsg   string
	}{
		{"the wait container is OOM-killed", simnode.Behavior{Fault: simnode.Fault{WaitExitCode: 137}},
			wfv1.NodeError, "wait: Error (exit code 137)"},
		{"the pod is evicted", simnode.Behavior{RunFor: 50 * time.Millisecond, Fault: simnode.Fault{Evict: true}},
			wfv1.NodeFailed, "The node was low on resource: memory."},
		{"a third party deletes the running pod", simnode.Behavior{RunFor: 100 * time.Millisecond, Fault: simnode.Fault{DeleteWhileRunning: true}},
			wfv1.NodeFailed, "main: Error (exit code 143)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"produce": tc.behavior}}})
			wf := e.Submit(manifest(producerConsumer, "rules", "10m"))
			done := e.WaitCompleted(wf.Name)
			n := harness.NodeByName(done, "rules[0].produce")
			if n.Phase != tc.wantPhase || !strings.HasPrefix(n.Message, tc.wantMsg) {
				t.Errorf("produce = %s %q, want %s %q\n%s", n.Phase, n.Message, tc.wantPhase, tc.wantMsg, harness.Describe(done))
			}
			if harness.NodeByName(done, "rules[1].consume") != nil {
				t.Errorf("the consumer ran after its producer failed")
			}
		})
	}
}

func TestAResultDeletedMidFlightEndsInATimeoutNotAHang(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "v1"}, Fault: simnode.Fault{NeverFinalize: true}},
	}}})
	wf := e.Submit(manifest(producerConsumer, "deleted-result", "2s"))
	running := e.WaitFor(wf.Name, "waiting for the result", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "deleted-result[0].produce")
		return n != nil && strings.HasPrefix(n.Message, "waiting for task result")
	})
	id := harness.NodeByName(running, "deleted-result[0].produce").ID
	if err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Delete(t.Context(), id, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	done := e.WaitCompleted(wf.Name)
	n := harness.NodeByName(done, "deleted-result[0].produce")
	if n.Phase != wfv1.NodeError || !strings.Contains(n.Message, "TaskResultTimeout: ") || !strings.Contains(n.Message, "no task result exists") {
		t.Errorf("produce = %s %q, want Error TaskResultTimeout saying no result exists", n.Phase, n.Message)
	}
	if got := e.Metric("wfguard_taskresult_direct_reads_total", map[string]string{"outcome": "not_found"}); got < 1 {
		t.Errorf("not_found direct reads = %v, want ≥ 1", got)
	}
}

func TestAResultOfADeletedSameNamedWorkflowIsNeverAdopted(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "fresh"}, Fault: simnode.Fault{NoResult: true}},
	}}})
	// A complete result left by an earlier workflow of the same name (different UID), for the same node ID.
	stale := &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{
			Name:   (&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "reused"}}).NodeID("reused[0].produce"),
			Labels: map[string]string{common.LabelKeyWorkflow: "reused", common.LabelKeyReportOutputsCompleted: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "reused",
				UID: types.UID("00000000-dead-beef-0000-000000000000")}},
		},
		NodeResult: wfv1.NodeResult{Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("stale")}}}},
	}
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wf := e.Submit(manifest(producerConsumer, "reused", "2s"))
	// And a result of this very workflow that names no node (bad input): ignored, never fatal.
	bogus := &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Name: "reused-no-such-node", Labels: map[string]string{common.LabelKeyWorkflow: "reused"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "reused", UID: wf.UID}}},
	}
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), bogus, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := e.WaitCompleted(wf.Name)
	n := harness.NodeByName(done, "reused[0].produce")
	if outputParam(n, "out") == "stale" {
		t.Fatalf("I6: the node adopted a deleted workflow's result")
	}
	if n.Phase != wfv1.NodeError || !strings.HasPrefix(n.Message, "TaskResultTimeout: ") {
		t.Errorf("produce = %s %q, want Error TaskResultTimeout", n.Phase, n.Message)
	}
	if got := e.Metric("wfguard_taskresult_ignored_total", map[string]string{"reason": "foreign_owner"}); got < 1 {
		t.Errorf("ignored foreign results = %v, want ≥ 1", got)
	}
	msgs := harness.Messages(e.WaitEvent("", wf.Name, "TaskResultIgnored"))
	if got := e.Metric("wfguard_taskresult_ignored_total", map[string]string{"reason": "unknown_node"}); got < 1 {
		t.Errorf("ignored unknown-node results = %v, want ≥ 1 (events: %v)", got, msgs)
	}
}

func TestAFailedPodWhoseExecutorNeverReportedKeepsItsFailureAfterTheTimeout(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {ExitCode: 2, Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{NoResult: true}},
	}}})
	wf := e.Submit(manifest(producerConsumer, "failed-silent", "2s"))
	done := e.WaitCompleted(wf.Name)
	n := harness.NodeByName(done, "failed-silent[0].produce")
	if n.Phase != wfv1.NodeFailed || n.Message != "main: Error (exit code 2)" {
		t.Errorf("produce = %s %q, want it to keep its failure", n.Phase, n.Message)
	}
	if n.TaskResultSynced == nil || !*n.TaskResultSynced {
		t.Errorf("produce's gate never opened")
	}
	if done.Status.Phase != wfv1.WorkflowFailed {
		t.Errorf("workflow = %s, want Failed", done.Status.Phase)
	}
	e.WaitEvent("", wf.Name, "TaskResultTimeout")
}
