package e2e_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func TestAnExitHandlerReadsTheWorkflowStatus(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	for _, tc := range []struct {
		sentence, name, exitField, mainTemplate string
		failuresArg                             string
		phase                                   wfv1.WorkflowPhase
		message                                 string
		mainNode                                nodeSummary
	}{
		{"spec.onExit after a failure sees Failed and the failures", "exit-failed", "onExit: report", "fail", `"{{workflow.failures}}"`,
			wfv1.WorkflowFailed, "main: Error (exit code 3)", nodeSummary{wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"}},
		{"spec.hooks.exit after a success sees Succeeded", "exit-ok", "hooks: {exit: {template: report}}", "ok", "none",
			wfv1.WorkflowSucceeded, "", nodeSummary{wfv1.NodeTypePod, wfv1.NodeSucceeded, ""}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  entrypoint: ` + tc.mainTemplate + `
  ` + tc.exitField + `
  templates:
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "3"}}
    container: {image: alpine, command: ["false"]}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: report
    container: {image: alpine, command: [echo, "{{workflow.status}}", ` + tc.failuresArg + `]}
`)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != tc.phase || done.Status.Message != tc.message {
				t.Errorf("workflow = %s %q, want %s %q", done.Status.Phase, done.Status.Message, tc.phase, tc.message)
			}
			assertNodes(t, done, map[string]nodeSummary{
				tc.name:             tc.mainNode,
				tc.name + ".onExit": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
			})
			exit := harness.NodeByName(done, tc.name+".onExit")
			if exit == nil {
				t.FailNow()
			}
			if exit.NodeFlag == nil || !exit.NodeFlag.Hooked {
				t.Errorf("the exit node is not flagged as hooked: %+v", exit.NodeFlag)
			}
			if main := harness.NodeByName(done, tc.name); exit.StartedAt.Before(&main.FinishedAt) {
				t.Errorf("the exit handler started at %s, before the entrypoint finished at %s", exit.StartedAt, main.FinishedAt)
			}
			args := mainArgs(e.PodOf(done, tc.name+".onExit"))
			if !slices.Contains(args, string(tc.phase)) {
				t.Errorf("the exit handler's argv %q lacks {{workflow.status}} = %s", args, tc.phase)
			}
			// argo's validator allows {{workflow.failures}} in spec.onExit's template only; argo quotes it.
			if failures := args[len(args)-1]; tc.phase == wfv1.WorkflowFailed &&
				(!strings.HasPrefix(failures, `"[{`) || !strings.Contains(failures, `\"displayName\":\"exit-failed\"`)) {
				t.Errorf("{{workflow.failures}} = %s, want the failed node listed", failures)
			}
		})
	}
}

func TestExitHandlersRunOnStopButNotOnTerminate(t *testing.T) {
	for _, tc := range []struct {
		strategy wfv1.ShutdownStrategy
		runs     bool
	}{{wfv1.ShutdownStrategyStop, true}, {wfv1.ShutdownStrategyTerminate, false}} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{RunFor: time.Hour}, t.Logf)})
			wf := e.Submit(`
metadata: {name: stopping}
spec:
  entrypoint: main
  onExit: cleanup
  templates:
  - name: main
    steps: [[{name: slow, template: slow}]]
  - name: slow
    container: {image: alpine, command: [sleep, "3600"]}
  - name: cleanup
    metadata: {annotations: {simnode.wfguard.io/run-for: 0s}}
    container: {image: alpine, command: [echo, "{{workflow.status}}"]}
`)
			e.WaitFor(wf.Name, "running its pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, "stopping[0].slow")
				return n != nil && n.Phase == wfv1.NodeRunning
			})
			e.patchSpec(wf.Name, `{"spec":{"shutdown":"`+string(tc.strategy)+`"}}`)
			done := e.WaitCompleted(wf.Name)
			want := "Stopped with strategy '" + string(tc.strategy) + "'"
			if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != want {
				t.Errorf("workflow = %s %q, want Failed %q\n%s", done.Status.Phase, done.Status.Message, want, harness.Describe(done))
			}
			exit := harness.NodeByName(done, "stopping.onExit")
			switch {
			case tc.runs && (exit == nil || exit.Phase != wfv1.NodeSucceeded):
				t.Errorf("on %s the exit handler should run and succeed:\n%s", tc.strategy, harness.Describe(done))
			case tc.runs:
				if args := mainArgs(e.PodOf(done, "stopping.onExit")); !slices.Contains(args, "Failed") {
					t.Errorf("the exit handler's argv %q lacks {{workflow.status}} = Failed", args)
				}
			case exit != nil:
				t.Errorf("on %s no exit handler should run:\n%s", tc.strategy, harness.Describe(done))
			}
		})
	}
}
