package engine

import (
	"context"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
)

// exprWorkflow runs a workflow's passes by hand: pass() runs one, succeed() ends a pod node with a result.
type exprWorkflow struct {
	t    *testing.T
	wf   *wfv1.Workflow
	e    *Engine
	pods *recordingPods
	now  time.Time
}

func newExprWorkflow(t *testing.T, spec string) *exprWorkflow {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: expr, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}
spec:
`+spec+`
`), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	return &exprWorkflow{t: t, wf: wf, e: &Engine{Pods: pods}, pods: pods, now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
}

func (w *exprWorkflow) pass() {
	w.t.Helper()
	w.now = w.now.Add(time.Second)
	runPass(w.t, w.e, w.wf, w.now)
}

// runPass runs one pass of e over wf at now, as the controller does: Start, then Execute unless the
// workflow ended at its start. It reports whether the workflow started.
func runPass(t *testing.T, e *Engine, wf *wfv1.Workflow, now time.Time) bool {
	t.Helper()
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
	started, err := e.Start(p)
	if err != nil {
		t.Fatal(err)
	}
	if started {
		if err := e.Execute(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return started
}

func (w *exprWorkflow) succeed(name, result string) {
	w.t.Helper()
	n := p0(w.wf, name)
	if n == nil {
		w.t.Fatalf("no node %s to finish", name)
	}
	synced := true
	n.Phase, n.TaskResultSynced = wfv1.NodeSucceeded, &synced
	n.Outputs = &wfv1.Outputs{Result: &result}
	w.wf.Status.Nodes[n.ID] = *n
}

func (w *exprWorkflow) started(name string) bool {
	_, ok := w.pods.created[w.wf.NodeID(name)]
	return ok
}

const exprWork = `
  - name: work
    inputs: {parameters: [{name: num, value: "0"}]}
    container: {image: alpine, command: ["true"]}`

func TestExpressionTagsAreEvaluatedWhereArgoSubstitutes(t *testing.T) {
	for _, tc := range []struct {
		sentence, spec string
		started        []string
	}{
		{"a `when` written as an expression tag reads workflow.parameters.json with jsonpath", `
  entrypoint: main
  arguments: {parameters: [{name: should-print, value: "true"}]}
  templates:
  - name: main
    inputs: {parameters: [{name: should-print}]}
    steps:
    - - {name: govaluate, template: work, when: "{{inputs.parameters.should-print}} == true"}
      - {name: expr, template: work, when: "{{= inputs.parameters[\"should-print\"] == 'true'}}"}
      - {name: json, template: work, when: "{{=jsonpath(workflow.parameters.json, '$[0].value') == 'true'}}"}` + exprWork,
			[]string{"expr[0].govaluate", "expr[0].expr", "expr[0].json"}},
		{"an expression tag over {{item}} is evaluated per iteration, with the workflow's functions", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: t
        template: work
        arguments: {parameters: [{name: num, value: "{{=asInt(item) * 10}}"}]}
        withParam: "{{=toJson(filter([1, 3], {# > 1}))}}"` + exprWork,
			[]string{"expr.t(0:3)"}},
	} {
		w := newExprWorkflow(t, tc.spec)
		w.pass()
		for _, name := range tc.started {
			if !w.started(name) {
				t.Errorf("%s: %s did not start; nodes: %v", tc.sentence, name, nodeSummary(w.wf))
			}
		}
	}
}

func TestAStepGroupThatCannotBeResolvedErrorsWithArgosMessage(t *testing.T) {
	for _, tc := range []struct {
		sentence, steps, result, group, msg string
		absent                              []string
	}{
		{"a `when` that cannot be evaluated errors the group, without a node for the step, naming the last such step", `
    - - {name: heads, template: work, when: "{{steps.flip.outputs.result}} == heads"}
      - {name: tails, template: work, when: "{{steps.flip.outputs.result}} == tails"}`, "flip-coin-result", "expr[1]",
			"Failed to resolve references: Failed to evaluate 'when' expresion 'flip-coin-result == tails': Value 'flip' cannot be used with the modifier '-', it is not a number",
			[]string{"expr[1].heads", "expr[1].tails"}},
		{"an item field that the items lack is argo's unresolved reference", `
    - - name: half
        template: work
        arguments: {parameters: [{name: num, value: "{{item.num}}"}]}
        withParam: "{{steps.flip.outputs.result}}"
        when: "{{item.evenness}} == even"`, `[["a", "b"]]`, "expr[1]", "failed to resolve {{item.num}}",
			[]string{"expr[1].half(0:[a b])"}},
		{"a withSequence bound that is not a number keeps strconv's error after the step and field", `
    - - {name: seq, template: work, withSequence: {end: "{{steps.flip.outputs.result}}"}}`, "five", "expr[1]",
			`step seq: withSequence.end: strconv.Atoi: parsing "five": invalid syntax`, nil},
	} {
		w := newExprWorkflow(t, `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: flip, template: work}`+tc.steps+exprWork)
		w.pass()
		w.succeed("expr[0].flip", tc.result)
		w.pass()
		g := p0(w.wf, tc.group)
		if g == nil || g.Phase != wfv1.NodeError || g.Message != tc.msg {
			t.Errorf("%s: group %s = %+v, want Error %q", tc.sentence, tc.group, g, tc.msg)
		}
		for _, name := range tc.absent {
			if p0(w.wf, name) != nil {
				t.Errorf("%s: node %s exists; argo creates none", tc.sentence, name)
			}
		}
	}
}

func TestALoopWhoseWhenIsAlreadyFalseLeavesItsItemReferencesAlone(t *testing.T) {
	w := newExprWorkflow(t, `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: half
        template: work
        arguments: {parameters: [{name: num, value: "{{item.num}}"}]}
        withItems: [[1, 2]]
        when: "a == b"`+exprWork)
	w.pass()
	n := p0(w.wf, "expr[0].half(0:[1 2])")
	if n == nil || n.Phase != wfv1.NodeSkipped {
		t.Errorf("the iteration = %+v, want Skipped (when evaluated false)", n)
	}
}

func nodeSummary(wf *wfv1.Workflow) map[string]string {
	out := map[string]string{}
	for _, n := range wf.Status.Nodes {
		out[n.Name] = string(n.Phase) + " " + n.Message
	}
	return out
}

func TestTheWorkflowsCreationTimestampHasArgosForms(t *testing.T) {
	wf := &wfv1.Workflow{}
	wf.CreationTimestamp.Time = time.Date(2026, 12, 3, 9, 5, 7, 0, time.UTC)
	g := globalParams(wf)
	for _, tc := range []struct{ sentence, key, want string }{
		{"the year by strftime's Y", "workflow.creationTimestamp.Y", "2026"},
		{"the month by strftime's m", "workflow.creationTimestamp.m", "12"},
		{"Unix seconds by .s", "workflow.creationTimestamp.s", "1796288707"},
		{"RFC 3339 by .RFC3339", "workflow.creationTimestamp.RFC3339", "2026-12-03T09:05:07Z"},
	} {
		if got := g[tc.key]; got != tc.want {
			t.Errorf("%s: {{%s}} = %q, want %q", tc.sentence, tc.key, got, tc.want)
		}
	}
}
