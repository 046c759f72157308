package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func TestAFanOutOf50FansInThroughWithParam(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf), workers: 4})
	var items []string
	for i := range 50 {
		items = append(items, fmt.Sprintf("v%02d", i))
	}
	wf := e.Submit(`
metadata: {name: fan}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: gen
        template: emit
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withItems: [` + strings.Join(items, ", ") + `]
    - - name: use
        template: echo
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withParam: "{{steps.gen.outputs.parameters.out}}"
    outputs:
      parameters: [{name: all, valueFrom: {parameter: "{{steps.use.outputs.parameters.out}}"}}]
  - name: emit
    inputs: {parameters: [{name: v}]}
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"out": "got-{{inputs.parameters.v}}"}'}}
    container: {image: alpine, command: [echo, "{{inputs.parameters.v}}"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: echo
    inputs: {parameters: [{name: v}]}
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"out": "{{inputs.parameters.v}}!"}'}}
    container: {image: alpine, command: [echo, "{{inputs.parameters.v}}"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`)
	done := e.WaitFor(wf.Name, "completed", 180e9, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	want := map[string]nodeSummary{
		"fan":    {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
		"fan[0]": {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"fan[1]": {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
	}
	var expected []string
	for i, v := range items {
		want[fmt.Sprintf("fan[0].gen(%d:%s)", i, v)] = nodeSummary{wfv1.NodeTypePod, wfv1.NodeSucceeded, ""}
		want[fmt.Sprintf("fan[1].use(%d:got-%s)", i, v)] = nodeSummary{wfv1.NodeTypePod, wfv1.NodeSucceeded, ""}
		expected = append(expected, `"got-`+v+`!"`)
	}
	assertNodes(t, done, want)
	if got := outputParam(harness.NodeByName(done, "fan"), "all"); got != "["+strings.Join(expected, ",")+"]" {
		t.Errorf("the fan-in of use's outputs, in iteration order = %s", got)
	}
	if args := mainArgs(e.PodOf(done, "fan[1].use(7:got-v07)")); !slices.Contains(args, "got-v07") {
		t.Errorf("{{item}} from withParam reached the pod: argv = %v", args)
	}
	for i := range 50 { // I2: the second group started after every iteration of the first was fulfilled
		gen := harness.NodeByName(done, fmt.Sprintf("fan[0].gen(%d:%s)", i, items[i]))
		if sg := harness.NodeByName(done, "fan[1]"); gen.FinishedAt.After(sg.StartedAt.Time) {
			t.Errorf("%s finished at %s, after group [1] started at %s", gen.Name, gen.FinishedAt, sg.StartedAt)
		}
	}
}

func TestDAGLoopsOverMapsSequencesAndAPreviousTasksOutput(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: dagloop}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: greet
        template: emit
        arguments: {parameters: [{name: v, value: "{{item.name}}-{{item.num}}"}]}
        withItems: [{name: ann, num: 1}, {name: bob, num: 2}]
      - name: count
        template: emit
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withSequence: {start: "3", end: "1", format: "c%d"}
      - name: each
        depends: greet && count
        template: emit
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withParam: "{{tasks.greet.outputs.parameters.out}}"
      - name: none
        template: emit
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withParam: "[]"
  - name: emit
    inputs: {parameters: [{name: v}]}
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"out": "{{inputs.parameters.v}}"}'}}
    container: {image: alpine, command: [echo, "{{inputs.parameters.v}}"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	pod := nodeSummary{wfv1.NodeTypePod, wfv1.NodeSucceeded, ""}
	group := nodeSummary{wfv1.NodeTypeTaskGroup, wfv1.NodeSucceeded, ""}
	assertNodes(t, done, map[string]nodeSummary{
		"dagloop":                         {wfv1.NodeTypeDAG, wfv1.NodeSucceeded, ""},
		"dagloop.greet":                   group,
		"dagloop.greet(0:name:ann,num:1)": pod,
		"dagloop.greet(1:name:bob,num:2)": pod,
		"dagloop.count":                   group,
		"dagloop.count(0:c3)":             pod,
		"dagloop.count(1:c2)":             pod,
		"dagloop.count(2:c1)":             pod,
		"dagloop.each":                    group,
		"dagloop.each(0:ann-1)":           pod,
		"dagloop.each(1:bob-2)":           pod,
		"dagloop.none":                    {wfv1.NodeTypeSkipped, wfv1.NodeSkipped, "Skipped, empty params"},
	})
	// As argo draws it: a task after a loop hangs under every iteration (the loop's outbound nodes).
	each := harness.NodeByName(done, "dagloop.each")
	for _, dep := range []string{"dagloop.greet", "dagloop.count"} {
		for _, id := range harness.NodeByName(done, dep).Children {
			if iteration := done.Status.Nodes[id]; !slices.Contains(iteration.Children, each.ID) {
				t.Errorf("%s's iteration %s does not list each as a child", dep, iteration.Name)
			}
		}
		if slices.Contains(harness.NodeByName(done, dep).Children, each.ID) {
			t.Errorf("%s lists each as a child beside its iterations; argo hangs it under them", dep)
		}
	}
}

func TestAWithParamThatIsNotAJSONListFailsOnlyItsWorkflow(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	bad := e.Submit(`
metadata: {name: badparam}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: emit}
    - - {name: use, template: ok, withParam: "{{steps.gen.outputs.parameters.out}}"}
  - name: emit
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"out": "not a list"}'}}
    container: {image: alpine, command: ["true"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: ok
    container: {image: alpine, command: ["true"]}
`)
	good := e.Submit(`
metadata: {name: neighbour}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: ok, withItems: [x, y]}]]
  - name: ok
    container: {image: alpine, command: ["true"]}
`)
	done := e.WaitCompleted(bad.Name)
	msg := "step use: withParam value could not be parsed as a JSON list: not a list: invalid character 'o' in literal null (expecting 'u')"
	if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != msg {
		t.Errorf("workflow = %s %q, want Failed %q", done.Status.Phase, done.Status.Message, msg)
	}
	assertNodes(t, done, map[string]nodeSummary{
		"badparam":        {wfv1.NodeTypeSteps, wfv1.NodeFailed, msg},
		"badparam[0]":     {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"badparam[0].gen": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"badparam[1]":     {wfv1.NodeTypeStepGroup, wfv1.NodeError, msg},
	})
	if n := e.WaitCompleted(good.Name); n.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the neighbour workflow ended %s\n%s", n.Status.Phase, harness.Describe(n))
	}
}
