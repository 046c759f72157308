package e2e_test

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// failUntilThirdAttempt fails a pod's main container unless its node is a third attempt, name(2).
func failUntilThirdAttempt(info simnode.PodInfo) simnode.Behavior {
	if strings.HasSuffix(info.Pod.Annotations[common.AnnotationKeyNodeName], "(2)") {
		return simnode.Behavior{}
	}
	return simnode.Behavior{ExitCode: 1}
}

func TestARetryWithBackoffSucceedsOnTheThirdAttempt(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{Func: failUntilThirdAttempt}})
	wf := e.Submit(`
metadata: {name: retry}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: flaky, template: flaky}]]
  - name: flaky
    retryStrategy: {limit: "3", retryPolicy: Always, backoff: {duration: 1s, factor: 2, maxDuration: 1m}}
    container: {image: alpine, command: [sh, -c, "exit 1"]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	failed := nodeSummary{wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"}
	assertNodes(t, done, map[string]nodeSummary{
		"retry":             {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
		"retry[0]":          {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"retry[0].flaky":    {wfv1.NodeTypeRetry, wfv1.NodeSucceeded, ""},
		"retry[0].flaky(0)": failed,
		"retry[0].flaky(1)": failed,
		"retry[0].flaky(2)": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
	})
	// Backoff: duration × factor^(n-1) after the previous attempt finished: 1s, then 2s.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
		prev := harness.NodeByName(done, "retry[0].flaky("+string(rune('0'+i))+")")
		next := harness.NodeByName(done, "retry[0].flaky("+string(rune('1'+i))+")")
		if gap := next.StartedAt.Sub(prev.FinishedAt.Time); gap < wait {
			t.Errorf("attempt %d started %s after attempt %d finished, want at least %s", i+1, gap, i, wait)
		}
		if next.NodeFlag == nil || !next.NodeFlag.Retried {
			t.Errorf("attempt %d is not flagged as a retry: %+v", i+1, next.NodeFlag)
		}
	}
	retryNode := harness.NodeByName(done, "retry[0].flaky")
	if len(retryNode.Children) != 3 {
		t.Errorf("the retry node has children %v, want its 3 attempts", retryNode.Children)
	}
	if retryNode.Outputs == nil || retryNode.Outputs.ExitCode == nil || *retryNode.Outputs.ExitCode != "0" {
		t.Errorf("the retry node's outputs = %v, want the last attempt's (exit code 0)", retryNode.Outputs)
	}
}

func TestRetriesEndByLimitPolicyOrABadExpression(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{ExitCode: 1}, t.Logf)})
	for _, tc := range []struct {
		sentence, strategy string
		want               map[string]nodeSummary
		message            string
	}{
		{"a spent limit fails the node with the last attempt's phase", `{limit: 1}`, map[string]nodeSummary{
			"r.a":    {wfv1.NodeTypeRetry, wfv1.NodeFailed, "No more retries left"},
			"r.a(0)": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
			"r.a(1)": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
		}, "No more retries left"},
		{"OnError does not retry a failure", `{limit: 3, retryPolicy: OnError}`, map[string]nodeSummary{
			"r.a":    {wfv1.NodeTypeRetry, wfv1.NodeFailed, "main: Error (exit code 1)"},
			"r.a(0)": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
		}, "main: Error (exit code 1)"},
		{"an expression that turns false stops retrying", `{limit: 5, expression: "asInt(retries) < 1"}`, map[string]nodeSummary{
			"r.a":    {wfv1.NodeTypeRetry, wfv1.NodeFailed, "retryStrategy.expression evaluated to false"},
			"r.a(0)": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
			"r.a(1)": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
		}, "retryStrategy.expression evaluated to false"},
		{"an expression that does not compile errors the node before any attempt", `{limit: 2, expression: "lastRetry.status =="}`, map[string]nodeSummary{
			"r.a": {wfv1.NodeTypeRetry, wfv1.NodeError, badExpression},
		}, badExpression},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {generateName: r-}
spec:
  entrypoint: main
  templates:
  - name: main
    dag: {tasks: [{name: a, template: fail}]}
  - name: fail
    retryStrategy: ` + tc.strategy + `
    container: {image: alpine, command: ["false"]}
`)
			done := e.WaitCompleted(wf.Name)
			// The DAG takes its task's phase; argo gives a failed DAG no message of its own.
			want := map[string]nodeSummary{wf.Name: {wfv1.NodeTypeDAG, tc.want["r.a"].Phase, ""}}
			for name, s := range tc.want {
				want[strings.Replace(name, "r", wf.Name, 1)] = s
			}
			assertNodes(t, done, want)
			if done.Status.Phase == wfv1.WorkflowSucceeded {
				t.Errorf("workflow succeeded; want it to fail")
			}
		})
	}
}

const badExpression = `retryStrategy.expression "lastRetry.status ==" does not compile: unexpected token EOF (1:19)
 | lastRetry.status ==
 | ..................^`
