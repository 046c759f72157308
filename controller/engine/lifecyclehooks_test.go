package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// hookPass is one pass of a lifecycle-hook scenario: the node phases the pods report before it, then
// which nodes must have a pod after it and which must not exist at all.
type hookPass struct {
	set     map[string]wfv1.NodePhase
	started []string
	absent  []string
}

const hookTemplates = `
  - {name: work, container: {image: alpine, command: ["true"]}}
  - {name: hook, container: {image: alpine, command: ["true"]}}
`

func TestLifecycleHooksStartOnceWhenTheirExpressionHoldsAndHoldWhatFollows(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		spec     string
		passes   []hookPass
		// hooks are the hook nodes expected at the end: name → parent node name.
		hooks map[string]string
	}{
		{"a step's running and succeeded hooks start once each as its children, and the next group waits for them", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: step-1
        template: work
        hooks:
          running: {expression: 'steps["step-1"].status == "Running"', template: hook}
          success: {expression: 'steps["step-1"].status == "Succeeded"', template: hook}
          failed: {expression: 'steps["step-1"].status == "Failed"', template: hook}
    - - {name: step2, template: work}`, []hookPass{
			{started: []string{"w[0].step-1"}, absent: []string{"w[0].step-1.hooks.running"}},
			{set: map[string]wfv1.NodePhase{"w[0].step-1": wfv1.NodeRunning}, started: []string{"w[0].step-1.hooks.running"}},
			{set: map[string]wfv1.NodePhase{"w[0].step-1.hooks.running": wfv1.NodeSucceeded}, absent: []string{"w[0].step-1.hooks.success", "w[1].step2"}},
			{set: map[string]wfv1.NodePhase{"w[0].step-1": wfv1.NodeSucceeded}, started: []string{"w[0].step-1.hooks.success"},
				absent: []string{"w[1].step2", "w[0].step-1.hooks.failed"}},
			{set: map[string]wfv1.NodePhase{"w[0].step-1.hooks.success": wfv1.NodeSucceeded}, started: []string{"w[1].step2"}},
			{set: map[string]wfv1.NodePhase{"w[1].step2": wfv1.NodeSucceeded}, absent: []string{"w[0].step-1.hooks.failed"}},
		}, map[string]string{"w[0].step-1.hooks.running": "w[0].step-1", "w[0].step-1.hooks.success": "w[0].step-1"}},
		{"a task's dependents wait for the hooks started on it; a hook whose expression never holds never starts", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: a
        template: work
        hooks:
          running: {expression: 'tasks.a.status == "Running"', template: hook}
          failed: {expression: 'tasks.a.status == "Failed"', template: hook}
      - {name: b, template: work, depends: a}`, []hookPass{
			{started: []string{"w.a"}},
			{set: map[string]wfv1.NodePhase{"w.a": wfv1.NodeRunning}, started: []string{"w.a.hooks.running"}},
			{set: map[string]wfv1.NodePhase{"w.a": wfv1.NodeSucceeded}, absent: []string{"w.b"}},
			{set: map[string]wfv1.NodePhase{"w.a.hooks.running": wfv1.NodeFailed}, started: []string{"w.b"}},
			{set: map[string]wfv1.NodePhase{"w.b": wfv1.NodeSucceeded}, absent: []string{"w.a.hooks.failed"}},
		}, map[string]string{"w.a.hooks.running": "w.a"}},
		{"a leaf task's hook holds the DAG's end", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: a
        template: work
        hooks:
          done: {expression: 'tasks.a.status == "Succeeded"', template: hook}`, []hookPass{
			{started: []string{"w.a"}},
			{set: map[string]wfv1.NodePhase{"w.a": wfv1.NodeSucceeded}, started: []string{"w.a.hooks.done"}},
			{set: map[string]wfv1.NodePhase{"w.a.hooks.done": wfv1.NodeSucceeded}},
		}, map[string]string{"w.a.hooks.done": "w.a"}},
		{"workflow-level hooks see workflow.status as the entrypoint makes it, and the exit handler waits for them", `
  entrypoint: main
  hooks:
    exit: {template: hook}
    running: {expression: 'workflow.status == "Running"', template: hook}
    done: {expression: 'workflow.status == "Succeeded"', template: hook}
  templates:
  - name: main
    steps:
    - - {name: s, template: work}`, []hookPass{
			{started: []string{"w[0].s", "w.hooks.running"}, absent: []string{"w.hooks.done"}},
			{set: map[string]wfv1.NodePhase{"w[0].s": wfv1.NodeSucceeded}, started: []string{"w.hooks.done"}, absent: []string{"w.onExit"}},
			{set: map[string]wfv1.NodePhase{"w.hooks.running": wfv1.NodeSucceeded, "w.hooks.done": wfv1.NodeSucceeded}, started: []string{"w.onExit"}},
			{set: map[string]wfv1.NodePhase{"w.onExit": wfv1.NodeSucceeded}},
		}, map[string]string{"w.hooks.running": "w", "w.hooks.done": "w"}},
	} {
		wf, pods := runHookScenario(t, tc.sentence, tc.spec, tc.passes)
		if wf.Status.Phase != wfv1.WorkflowSucceeded {
			t.Errorf("%s: the workflow ended %s (%s), want Succeeded", tc.sentence, wf.Status.Phase, wf.Status.Message)
		}
		for name, parent := range tc.hooks {
			checkHookNode(t, tc.sentence, wf, name, parent)
			if n := p0(wf, name); n != nil && pods.created[n.ID] == nil {
				t.Errorf("%s: hook %s has no pod", tc.sentence, name)
			}
		}
	}
}

// runHookScenario runs spec (workflow "w") through passes, checking each pass's expectations.
func runHookScenario(t *testing.T, sentence, spec string, passes []hookPass) (*wfv1.Workflow, *recordingPods) {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte("metadata: {name: w, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}\nspec:"+
		spec+hookTemplates), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i, pass := range passes {
		for name, phase := range pass.set {
			n := p0(wf, name)
			if n == nil {
				t.Fatalf("%s: pass %d: no node %s to set %s", sentence, i, name, phase)
			}
			synced := phase.Fulfilled(nil)
			n.Phase, n.TaskResultSynced = phase, &synced
			wf.Status.Nodes[n.ID] = *n
		}
		now = now.Add(time.Second)
		runPass(t, e, wf, now)
		for _, name := range pass.started {
			if pods.created[wf.NodeID(name)] == nil {
				t.Errorf("%s: pass %d: %s has no pod", sentence, i, name)
			}
		}
		for _, name := range pass.absent {
			if p0(wf, name) != nil {
				t.Errorf("%s: pass %d: %s exists", sentence, i, name)
			}
		}
	}
	if len(pods.order) != len(slices.Compact(slices.Sorted(slices.Values(pods.order)))) {
		t.Errorf("%s: a pod was created twice: %v", sentence, pods.order)
	}
	return wf, pods
}

// checkHookNode asserts argo's shape of a hook node: flagged hooked, a child of its node, and displayed
// as the node's display name with .hooks.NAME (the full name at workflow level).
func checkHookNode(t *testing.T, sentence string, wf *wfv1.Workflow, name, parent string) {
	t.Helper()
	n, par := p0(wf, name), p0(wf, parent)
	if n == nil || par == nil {
		t.Errorf("%s: hook %s or its node %s is missing", sentence, name, parent)
		return
	}
	wantDisplay := par.DisplayName + name[strings.Index(name, ".hooks."):]
	if parent == wf.Name {
		wantDisplay = name
	}
	if n.NodeFlag == nil || !n.NodeFlag.Hooked || !slices.Contains(par.Children, n.ID) || n.DisplayName != wantDisplay {
		t.Errorf("%s: hook %s: flag %+v, child of %s %v, display %q (want %q)", sentence, name, n.NodeFlag, parent,
			slices.Contains(par.Children, n.ID), n.DisplayName, wantDisplay)
	}
}

func TestALifecycleHookWhoseExpressionCannotBeEvaluatedEndsTheWorkflowWithWhy(t *testing.T) {
	for _, tc := range []struct {
		sentence, spec string
		phase          wfv1.WorkflowPhase
		message        string
	}{
		{"a step's hook errors its step group, which fails the workflow", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: a
        template: work
        hooks: {running: {expression: 'steps.a.status == Running', template: hook}}`,
			wfv1.WorkflowFailed, "evaluating the expression of hook w[0].a.hooks.running: unknown name Running"},
		{"a task's hook errors its DAG", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: a
        template: work
        hooks: {running: {expression: 'tasks.a.status == Running', template: hook}}`,
			wfv1.WorkflowError, "evaluating the expression of hook w.a.hooks.running: unknown name Running"},
		{"a workflow-level hook errors the entrypoint node, as argo does", `
  entrypoint: main
  hooks: {running: {expression: 'workflow.status == Running', template: hook}}
  templates:
  - name: main
    steps:
    - - {name: a, template: work}`,
			wfv1.WorkflowError, "evaluating the expression of hook w.hooks.running: unknown name Running"},
	} {
		wf, _ := runHookScenario(t, tc.sentence, tc.spec, []hookPass{{}, {}, {}})
		if wf.Status.Phase != tc.phase || !strings.Contains(wf.Status.Message, tc.message) {
			t.Errorf("%s: the workflow ended %s %q, want %s with %q", tc.sentence, wf.Status.Phase, wf.Status.Message, tc.phase, tc.message)
		}
	}
}
