package chaos

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
)

// The oracle must flag a failure no fault explains, or a controller that errors every workflow under
// faults would pass the chaos suite.
func TestTheOracleFlagsEverySpuriousFailure(t *testing.T) {
	const uid = "w-uid"
	wf := func(phase wfv1.WorkflowPhase, msg string, nodes ...wfv1.NodeStatus) *wfv1.Workflow {
		w := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uid}, Status: wfv1.WorkflowStatus{Phase: phase, Message: msg, Nodes: wfv1.Nodes{}}}
		for _, n := range nodes {
			w.Status.Nodes[n.ID] = n
		}
		return w
	}
	node := func(id string, phase wfv1.NodePhase, msg string) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: id, Name: "w." + id, Type: wfv1.NodeTypePod, Phase: phase, Message: msg}
	}
	pod := func(id string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-step-" + id,
			Labels: map[string]string{podspec.LabelWorkflowUID: uid}, Annotations: map[string]string{common.AnnotationKeyNodeID: id}}}
	}
	stopped := version{wf: &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{UID: uid}}, ext: extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyStop}}
	at := func(rv int64, phase wfv1.WorkflowPhase, shutdown wfv1.ShutdownStrategy) version {
		return version{rv: rv, wf: &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: wfv1.WorkflowStatus{Phase: phase}}, ext: extstatus.Extensions{Shutdown: shutdown}}
	}
	// Stopped, ended Failed, then retried (Pending at rv 6).
	stoppedThenRetried := []version{at(3, wfv1.WorkflowRunning, wfv1.ShutdownStrategyStop), at(4, wfv1.WorkflowFailed, wfv1.ShutdownStrategyStop), at(6, wfv1.WorkflowPending, "")}
	cases := []struct {
		sentence string
		fates    map[string]fate // pod name → fate
		versions []version
		final    *wfv1.Workflow
		spurious causeClass // "" = explained
	}{
		{"a workflow whose pods were all healthy and that succeeded is as expected",
			map[string]fate{"w-step-a": fateHealthy}, nil, wf(wfv1.WorkflowSucceeded, "", node("a", wfv1.NodeSucceeded, "")), ""},
		{"a node that failed with exit code 1 because its pod was dealt exit 1 is explained",
			map[string]fate{"w-step-a": fateExitCode}, nil, wf(wfv1.WorkflowFailed, "", node("a", wfv1.NodeFailed, "main: Error (exit code 1)")), ""},
		{"a node that timed out on a result its pod never wrote is explained",
			map[string]fate{"w-step-a": fateNoResult}, nil, wf(wfv1.WorkflowError, "", node("a", wfv1.NodeError, "TaskResultTimeout: the executor's report did not complete")), ""},
		{"a node Error on a late-but-delivered result is spurious (the planted failure)",
			map[string]fate{"w-step-a": fateLateResult}, nil, wf(wfv1.WorkflowError, "", node("a", wfv1.NodeError, "TaskResultTimeout: the executor's report did not complete")), causeClass(fateNoResult)},
		{"a node declared deleted whose pod was healthy is spurious",
			map[string]fate{"w-step-a": fateHealthy}, nil, wf(wfv1.WorkflowError, "", node("a", wfv1.NodeError, "pod deleted")), causeClass(fateDeleted)},
		{"a node whose pod was dealt exit 1 but whose message names another cause is spurious",
			map[string]fate{"w-step-a": fateExitCode}, nil, wf(wfv1.WorkflowError, "", node("a", wfv1.NodeError, "pod deleted")), causeClass(fateDeleted)},
		{"a node with an unrecognised message is spurious under its own class",
			map[string]fate{"w-step-a": fateHealthy}, nil, wf(wfv1.WorkflowError, "", node("a", wfv1.NodeError, "injected fault: 500")), causeUnclassed},
		{"a Stop explains a failed node whose pod was healthy",
			map[string]fate{"w-step-a": fateHealthy}, []version{stopped}, wf(wfv1.WorkflowFailed, "Stopped with strategy 'Stop'", node("a", wfv1.NodeFailed, "Stopped with strategy 'Stop'")), ""},
		{"a Stop of the first run does not explain a failure of the run a Retry started",
			map[string]fate{"w-step-a": fateHealthy}, stoppedThenRetried, wf(wfv1.WorkflowFailed, "Stopped with strategy 'Stop'", node("a", wfv1.NodeFailed, "Stopped with strategy 'Stop'")), causeShutdown},
		{"a Stop of the run a Retry started explains its failed node",
			map[string]fate{"w-step-a": fateHealthy}, append(stoppedThenRetried, at(8, wfv1.WorkflowRunning, wfv1.ShutdownStrategyStop)),
			wf(wfv1.WorkflowFailed, "Stopped with strategy 'Stop'", node("a", wfv1.NodeFailed, "Stopped with strategy 'Stop'")), ""},
		{"a Terminate of the run a Retry started explains a node it never started, whose earlier pod was healthy",
			map[string]fate{"w-step-a": fateHealthy}, append(stoppedThenRetried, at(8, wfv1.WorkflowRunning, wfv1.ShutdownStrategyTerminate)),
			wf(wfv1.WorkflowFailed, "Stopped with strategy 'Terminate'", node("a", wfv1.NodeFailed, "workflow shutdown with strategy: Terminate")), ""},
		{"a retried node that failed again on its own pod's fate is explained",
			map[string]fate{"w-step-a": fateExitCode}, stoppedThenRetried, wf(wfv1.WorkflowFailed, "", node("a", wfv1.NodeFailed, "main: Error (exit code 1)")), ""},
		{"a workflow that failed with no failed pod node and no shutdown is spurious",
			map[string]fate{"w-step-a": fateHealthy}, nil, wf(wfv1.WorkflowError, "injected fault: 409", node("a", wfv1.NodeSucceeded, "")), causeUnclassed},
	}
	for _, c := range cases {
		t.Run(c.sentence, func(t *testing.T) {
			var h history
			for name := range c.fates {
				p := pod(strings.TrimPrefix(name, "w-step-"))
				h.pods = append(h.pods, p)
			}
			report, violations := explain(c.versions, h, []*wfv1.Workflow{c.final}, func(p *corev1.Pod) fate { return c.fates[p.Name] })
			if c.spurious == "" {
				if len(violations) > 0 {
					t.Fatalf("want no spurious failure, got %v\n%s", violations, report)
				}
				return
			}
			if len(violations) != 1 || violations[0].Invariant != "I11" || len(report.spurious[c.spurious]) != 1 {
				t.Fatalf("want one I11 violation classed %q, got %v\n%s", c.spurious, violations, report)
			}
		})
	}
}
