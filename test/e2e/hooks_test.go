package e2e_test

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// Templates shared by the step and task exit-handler tests: produce writes output p; report echoes what
// its hook passes; cleanup fails (exit code 3) to show a failing handler changes no phase.
const hookTemplates = `
  - name: produce
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"p": "v1"}'}}
    container: {image: alpine, command: ["true"]}
    outputs: {parameters: [{name: p, valueFrom: {path: /tmp/p}}]}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "1"}}
    container: {image: alpine, command: ["false"]}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: report
    inputs: {parameters: [{name: status}, {name: out}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.status}}", "{{inputs.parameters.out}}"]}
  - name: cleanup
    metadata: {annotations: {simnode.wfguard.io/exit-code: "3"}}
    container: {image: alpine, command: ["false"]}
`

func TestStepExitHandlersRunAfterTheirStepAndHoldTheNextGroup(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: step-hooks}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: a
        template: produce
        hooks:
          exit:
            template: report
            arguments: {parameters: [{name: status, value: "{{steps.a.status}}"}, {name: out, value: "{{steps.a.outputs.parameters.p}}"}]}
      - {name: b, template: fail, onExit: cleanup, continueOn: {failed: true}}
    - - {name: c, template: ok}
` + hookTemplates)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("workflow = %s %q, want Succeeded (b continues on failure; a failing handler changes nothing)", done.Status.Phase, done.Status.Message)
	}
	assertNodes(t, done, map[string]nodeSummary{
		"step-hooks":             {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
		"step-hooks[0]":          {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"step-hooks[0].a":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"step-hooks[0].a.onExit": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"step-hooks[0].b":        {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
		"step-hooks[0].b.onExit": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
		"step-hooks[1]":          {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"step-hooks[1].c":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
	})
	assertHooked(t, done, map[string]string{"step-hooks[0].a": "step-hooks[0].a.onExit", "step-hooks[0].b": "step-hooks[0].b.onExit"}, "step-hooks[1].c")
	if args := mainArgs(e.PodOf(done, "step-hooks[0].a.onExit")); !slices.Contains(args, "Succeeded") || !slices.Contains(args, "v1") {
		t.Errorf("the exit handler's argv %q lacks {{steps.a.status}} = Succeeded and {{steps.a.outputs.parameters.p}} = v1", args)
	}
	if pod := e.PodOf(done, "step-hooks[0].a.onExit"); pod.Labels["workflows.argoproj.io/on-exit"] != "true" {
		t.Errorf("the exit handler's pod is not labelled as one: %v", pod.Labels)
	}
}

func TestTaskExitHandlersHoldDependentsAndTheDAGsEnd(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: task-hooks}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: a
        template: produce
        hooks:
          exit:
            template: report
            arguments: {parameters: [{name: status, value: "{{tasks.a.status}}"}, {name: out, value: "{{tasks.a.outputs.parameters.p}}"}]}
      - {name: b, template: ok, depends: a}
      - {name: c, template: ok, onExit: cleanup}
      - {name: skipped, template: ok, when: "false", onExit: cleanup}
` + hookTemplates)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("workflow = %s %q, want Succeeded (a failing handler changes no phase)", done.Status.Phase, done.Status.Message)
	}
	assertNodes(t, done, map[string]nodeSummary{
		"task-hooks":          {wfv1.NodeTypeDAG, wfv1.NodeSucceeded, ""},
		"task-hooks.a":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"task-hooks.a.onExit": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"task-hooks.b":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"task-hooks.c":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"task-hooks.c.onExit": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
		"task-hooks.skipped":  {wfv1.NodeTypeSkipped, wfv1.NodeSkipped, "when 'false' evaluated false"},
	})
	assertHooked(t, done, map[string]string{"task-hooks.a": "task-hooks.a.onExit"}, "task-hooks.b")
	if args := mainArgs(e.PodOf(done, "task-hooks.a.onExit")); !slices.Contains(args, "Succeeded") || !slices.Contains(args, "v1") {
		t.Errorf("the exit handler's argv %q lacks {{tasks.a.status}} and {{tasks.a.outputs.parameters.p}}", args)
	}
	if dag, hook := harness.NodeByName(done, "task-hooks"), harness.NodeByName(done, "task-hooks.c.onExit"); dag.FinishedAt.Before(&hook.FinishedAt) {
		t.Errorf("the DAG finished at %s, before a leaf's exit handler at %s", dag.FinishedAt, hook.FinishedAt)
	}
}

// assertHooked checks each node's handler is its child, flagged Hooked, started after the node finished,
// and finished before next started.
func assertHooked(t *testing.T, wf *wfv1.Workflow, hooks map[string]string, next string) {
	t.Helper()
	after := harness.NodeByName(wf, next)
	for parentName, hookName := range hooks {
		parent, hook := harness.NodeByName(wf, parentName), harness.NodeByName(wf, hookName)
		if parent == nil || hook == nil || after == nil {
			t.Fatalf("missing node among %s, %s, %s", parentName, hookName, next)
		}
		if !slices.Contains(parent.Children, hook.ID) {
			t.Errorf("%s is not a child of %s", hookName, parentName)
		}
		if hook.NodeFlag == nil || !hook.NodeFlag.Hooked {
			t.Errorf("%s is not flagged as hooked: %+v", hookName, hook.NodeFlag)
		}
		if hook.StartedAt.Before(&parent.FinishedAt) {
			t.Errorf("%s started at %s, before %s finished at %s", hookName, hook.StartedAt, parentName, parent.FinishedAt)
		}
		if after.StartedAt.Before(&hook.FinishedAt) {
			t.Errorf("%s started at %s, before the exit handler %s finished at %s", next, after.StartedAt, hookName, hook.FinishedAt)
		}
	}
}

func TestStepExitHandlersRunOnStopButNotOnTerminate(t *testing.T) {
	for _, tc := range []struct {
		strategy wfv1.ShutdownStrategy
		runs     bool
	}{{wfv1.ShutdownStrategyStop, true}, {wfv1.ShutdownStrategyTerminate, false}} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{RunFor: time.Hour}, t.Logf)})
			wf := e.Submit(`
metadata: {name: stop-hooks}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: slow, template: slow, hooks: {exit: {template: cleanup}}}]]
  - name: slow
    container: {image: alpine, command: [sleep, "3600"]}
  - name: cleanup
    metadata: {annotations: {simnode.wfguard.io/run-for: 0s}}
    container: {image: alpine, command: ["true"]}
`)
			e.WaitFor(wf.Name, "running its pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, "stop-hooks[0].slow")
				return n != nil && n.Phase == wfv1.NodeRunning
			})
			e.patchSpec(wf.Name, `{"spec":{"shutdown":"`+string(tc.strategy)+`"}}`)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowFailed {
				t.Errorf("workflow = %s %q, want Failed\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
			}
			hook := harness.NodeByName(done, "stop-hooks[0].slow.onExit")
			switch {
			case tc.runs && (hook == nil || hook.Phase != wfv1.NodeSucceeded):
				t.Errorf("on %s the step's exit handler should run and succeed:\n%s", tc.strategy, harness.Describe(done))
			case tc.runs:
				if pod := e.PodOf(done, "stop-hooks[0].slow.onExit"); pod.Labels["workflows.argoproj.io/on-exit"] != "true" {
					t.Errorf("the handler's pod is not an exit-handler pod: %v", pod.Labels)
				}
			case hook != nil:
				t.Errorf("on %s no exit handler should run:\n%s", tc.strategy, harness.Describe(done))
			}
		})
	}
}
