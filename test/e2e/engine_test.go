package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func str(s string) *string { return &s }

func TestAScriptResultFeedsTheNextStep(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"gen":     {Result: str("hello")},
		"consume": {Parameters: map[string]string{"echoed": "got hello"}},
	}}})
	wf := e.Submit(`
metadata: {name: result-chain}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: gen
        template: gen
    - - name: consume
        template: consume
        arguments:
          parameters: [{name: msg, value: "{{steps.gen.outputs.result}}"}]
  - name: gen
    script: {image: alpine, command: [sh], source: "echo hello"}
  - name: consume
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo], args: ["{{inputs.parameters.msg}}"]}
    outputs: {parameters: [{name: echoed, valueFrom: {path: /tmp/out}}]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s, want Succeeded\n%s", done.Status.Phase, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"result-chain":            {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
		"result-chain[0]":         {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"result-chain[0].gen":     {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"result-chain[1]":         {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"result-chain[1].consume": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
	})
	gen := harness.NodeByName(done, "result-chain[0].gen")
	if gen.Outputs == nil || gen.Outputs.Result == nil || *gen.Outputs.Result != "hello" {
		t.Errorf("gen outputs = %v, want result hello", gen.Outputs)
	}
	if args := mainArgs(e.PodOf(done, "result-chain[1].consume")); !slices.Contains(args, "hello") {
		t.Errorf("consume's main argv = %v, want the result hello substituted", args)
	}
	if got := outputParam(harness.NodeByName(done, "result-chain[1].consume"), "echoed"); got != "got hello" {
		t.Errorf("consume output echoed = %q", got)
	}
}

func TestADAGDiamondPassesParameters(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: diamond}
spec:
  entrypoint: main
  arguments: {parameters: [{name: seed, value: "7"}]}
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: emit, arguments: {parameters: [{name: v, value: "{{workflow.parameters.seed}}"}]}}
      - {name: b, template: emit, depends: a, arguments: {parameters: [{name: v, value: "{{tasks.a.outputs.parameters.out}}b"}]}}
      - {name: c, template: emit, depends: "a.Succeeded", arguments: {parameters: [{name: v, value: "{{tasks.a.outputs.parameters.out}}c"}]}}
      - {name: d, template: emit, depends: "b && c", arguments: {parameters: [{name: v, value: "{{tasks.b.outputs.parameters.out}}+{{tasks.c.outputs.parameters.out}}"}]}}
  - name: emit
    inputs: {parameters: [{name: v}]}
    metadata:
      annotations: {simnode.wfguard.io/parameters: '{"out": "{{inputs.parameters.v}}"}'}
    container: {image: alpine, command: [echo], args: ["{{inputs.parameters.v}}"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	for task, want := range map[string]string{"a": "7", "b": "7b", "c": "7c", "d": "7b+7c"} {
		if got := outputParam(harness.NodeByName(done, "diamond."+task), "out"); got != want {
			t.Errorf("task %s out = %q, want %q", task, got, want)
		}
	}
	// d started only after both b and c were fulfilled (I2).
	d := harness.NodeByName(done, "diamond.d")
	for _, dep := range []string{"diamond.b", "diamond.c"} {
		if n := harness.NodeByName(done, dep); n.FinishedAt.After(d.StartedAt.Time) {
			t.Errorf("%s finished at %s, after d started at %s", dep, n.FinishedAt, d.StartedAt)
		}
		if !slices.Contains(harness.NodeByName(done, dep).Children, d.ID) {
			t.Errorf("%s does not list d as a child", dep)
		}
	}
}

func TestWhenSkipsABranchAndDependsReactsToFailure(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: branches}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: flip, template: flip}
      - {name: heads, template: ok, depends: flip, when: "{{tasks.flip.outputs.result}} == heads"}
      - {name: tails, template: ok, depends: flip, when: "{{tasks.flip.outputs.result}} == tails"}
      - {name: boom, template: fail}
      - {name: on-failure, template: ok, depends: boom.Failed}
      - {name: report, template: ok, depends: "boom.Succeeded || boom.Failed"}
  - name: flip
    metadata: {annotations: {simnode.wfguard.io/result: heads}}
    script: {image: alpine, command: [sh], source: "echo heads"}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "3"}}
    container: {image: alpine, command: ["false"]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("failures handled by depends and continueOn should not fail the DAG: phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"branches":            {wfv1.NodeTypeDAG, wfv1.NodeSucceeded, ""},
		"branches.flip":       {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"branches.heads":      {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"branches.tails":      {wfv1.NodeTypeSkipped, wfv1.NodeSkipped, "when 'heads == tails' evaluated false"},
		"branches.boom":       {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
		"branches.on-failure": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"branches.report":     {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
	})
}

func TestContinueOnLetsADependentRunAndKeepsTheDAGGreen(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: continue-on}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: flaky, template: fail, continueOn: {failed: true}}
      - {name: after, template: ok, dependencies: [flaky]}
      - {name: leaf-flaky, template: fail, continueOn: {failed: true}}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "3"}}
    container: {image: alpine, command: ["false"]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"continue-on":            {wfv1.NodeTypeDAG, wfv1.NodeSucceeded, ""},
		"continue-on.flaky":      {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
		"continue-on.after":      {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"continue-on.leaf-flaky": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
	})
}

func TestAnOmittedLeafInheritsItsBranchsFailure(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: inherit}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: boom, template: fail}
      - {name: on-failure, template: ok, depends: boom.Failed}
      - {name: deploy, template: ok, depends: boom}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "3"}}
    container: {image: alpine, command: ["false"]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("phase = %s, want Failed (argo: the omitted leaf deploy inherits boom's failure)\n%s", done.Status.Phase, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"inherit":            {wfv1.NodeTypeDAG, wfv1.NodeFailed, ""},
		"inherit.boom":       {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 3)"},
		"inherit.on-failure": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"inherit.deploy":     {wfv1.NodeTypeSkipped, wfv1.NodeOmitted, "omitted: depends condition not met"},
	})
}

func TestAFailedStepFailsTheWorkflowWithArgosMessages(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: failing}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: ok, template: ok}
      - {name: bad, template: bad}
    - - {name: never, template: ok}
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: bad
    metadata: {annotations: {simnode.wfguard.io/exit-code: "1"}}
    container: {image: alpine, command: ["false"]}
`)
	done := e.WaitCompleted(wf.Name)
	bad := harness.NodeByName(done, "failing[0].bad")
	if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != "child '"+bad.ID+"' failed" {
		t.Fatalf("workflow = %s %q, want Failed \"child '%s' failed\"\n%s", done.Status.Phase, done.Status.Message, bad.ID, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"failing":        {wfv1.NodeTypeSteps, wfv1.NodeFailed, "child '" + bad.ID + "' failed"},
		"failing[0]":     {wfv1.NodeTypeStepGroup, wfv1.NodeFailed, "child '" + bad.ID + "' failed"},
		"failing[0].ok":  {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"failing[0].bad": {wfv1.NodeTypePod, wfv1.NodeFailed, "main: Error (exit code 1)"},
	})
	if code := bad.Outputs; code == nil || code.ExitCode == nil || *code.ExitCode != "1" {
		t.Errorf("bad exit code = %v, want 1", code)
	}
}

func TestInvalidInputFailsTheWorkflowWithAClearMessageAndNoPods(t *testing.T) {
	e := newEnv(t, envOptions{})
	cases := []struct {
		name, manifest, want string
	}{
		{"a missing template", `
metadata: {name: missing-template}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: nope}]]`, "template name 'nope' undefined"},
		{"an unknown template type", `
metadata: {name: unknown-type}
spec:
  entrypoint: main
  templates:
  - name: main`, "template 'main' type is unknown"},
		{"a cyclic DAG", `
metadata: {name: cyclic}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: ok, dependencies: [b]}
      - {name: b, template: ok, dependencies: [a]}
  - name: ok
    container: {image: alpine, command: ["true"]}`, "graph with cycle"},
		{"an unresolved reference", `
metadata: {name: unresolved}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: [echo, "{{workflow.parameters.nope}}"]}`, "failed to resolve {{workflow.parameters.nope}}"},
		{"a feature wfguard does not run yet", `
metadata: {name: unsupported}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: ok}]]
  - name: ok
    http: {url: "https://example.com"}`, "not supported by wfguard yet: template ok: http template (argo runs it in its agent pod, which wfguard does not run)"},
		{"an oversized workflow", `
metadata: {name: oversized}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"], args: ["` + strings.Repeat("x", 1100*1024) + `"]}`, "larger than the 1048576-byte limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(tc.manifest)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowFailed || !strings.HasPrefix(done.Status.Message, "invalid spec: ") ||
				!strings.Contains(done.Status.Message, tc.want) {
				t.Errorf("workflow = %s %q, want Failed with \"invalid spec: ...%s...\"", done.Status.Phase, done.Status.Message, tc.want)
			}
			if len(done.Status.Nodes) != 0 {
				t.Errorf("an invalid workflow got nodes: %s", harness.Describe(done))
			}
		})
	}
	// The controller keeps serving: a valid workflow in the same namespace still runs.
	ok := e.Submit(`
metadata: {name: still-served}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}`)
	if done := e.WaitCompleted(ok.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("a valid workflow after invalid ones ended %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metaListAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Errorf("want exactly the valid workflow's pod, got %d pods", len(pods.Items))
	}
}

func TestSuspendWithAndWithoutDuration(t *testing.T) {
	e := newEnv(t, envOptions{})
	timed := e.Submit(`
metadata: {name: timed}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: pause, template: pause}], [{name: after, template: ok}]]
  - name: pause
    suspend: {duration: "2s"}
  - name: ok
    container: {image: alpine, command: ["true"]}`)
	forever := e.Submit(`
metadata: {name: forever}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: pause, template: pause}], [{name: after, template: ok}]]
  - name: pause
    suspend: {}
  - name: ok
    container: {image: alpine, command: ["true"]}`)
	done := e.WaitCompleted(timed.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("timed suspend: %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	pause := harness.NodeByName(done, "timed[0].pause")
	if pause.Type != wfv1.NodeTypeSuspend || pause.FinishedAt.Sub(pause.StartedAt.Time) < 2*time.Second {
		t.Errorf("pause node %s lasted %s, want a Suspend node of at least 2s", pause.Type, pause.FinishedAt.Sub(pause.StartedAt.Time))
	}
	held := e.WaitFor(forever.Name, "suspended", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "forever[0].pause")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	if held.Status.Phase != wfv1.WorkflowRunning || harness.NodeByName(held, "forever[1].after") != nil {
		t.Errorf("an indefinite suspend must hold the workflow:\n%s", harness.Describe(held))
	}
}

func TestTheWorkflowDeadlineFailsRunningSteps(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{RunFor: time.Hour}}})
	wf := e.Submit(`
metadata: {name: deadline}
spec:
  entrypoint: main
  activeDeadlineSeconds: 2
  templates:
  - name: main
    steps: [[{name: slow, template: slow}]]
  - name: slow
    container: {image: alpine, command: [sleep, "3600"]}`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	if n := harness.NodeByName(done, "deadline[0].slow"); n.Phase != wfv1.NodeFailed || n.Message != "Step exceeded its deadline" {
		t.Errorf("slow = %s %q, want Failed \"Step exceeded its deadline\"", n.Phase, n.Message)
	}
}

func TestLegacyShutdownStopsAndTerminates(t *testing.T) {
	for _, strategy := range []wfv1.ShutdownStrategy{wfv1.ShutdownStrategyStop, wfv1.ShutdownStrategyTerminate} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{RunFor: time.Hour}}})
			wf := e.Submit(`
metadata: {name: shutdown}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: slow, template: slow}], [{name: next, template: slow}]]
  - name: slow
    container: {image: alpine, command: [sleep, "3600"]}`)
			e.WaitFor(wf.Name, "running its pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, "shutdown[0].slow")
				return n != nil && n.Phase == wfv1.NodeRunning
			})
			e.patchSpec(wf.Name, `{"spec":{"shutdown":"`+string(strategy)+`"}}`)
			done := e.WaitCompleted(wf.Name)
			want := "Stopped with strategy '" + string(strategy) + "'"
			if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != want {
				t.Errorf("workflow = %s %q, want Failed %q\n%s", done.Status.Phase, done.Status.Message, want, harness.Describe(done))
			}
			if n := harness.NodeByName(done, "shutdown[0].slow"); n.Phase != wfv1.NodeFailed || n.Message != want {
				t.Errorf("slow = %s %q, want Failed %q", n.Phase, n.Message, want)
			}
			if harness.NodeByName(done, "shutdown[1].next") != nil {
				t.Errorf("a step after shutdown started:\n%s", harness.Describe(done))
			}
		})
	}
}

// Issue #44 item 2: a steps group that calls its own template twice expanded a depth-100 binary tree in one
// pass, holding a worker for ever (the depth check errored only the deepest node and its siblings went on).
// Every shape of unbounded recursion now ends its workflow Error at the depth, in one pass, as argo ends it.
func TestUnboundedRecursionEndsItsWorkflowAtTheDepthWhileOthersRun(t *testing.T) {
	e := newEnv(t, envOptions{workers: 2})
	bombs := map[string]string{
		"recurse": `
metadata: {name: recurse}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: again, template: main}]]
`,
		"bomb": `
metadata: {name: bomb}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: main}, {name: b, template: main}]]
`,
		"dag-bomb": `
metadata: {name: dag-bomb}
spec:
  entrypoint: main
  templates:
  - name: main
    dag: {tasks: [{name: a, template: main}, {name: b, template: main}]}
`,
	}
	for _, m := range bombs {
		e.Submit(m)
	}
	ok := e.Submit(`
metadata: {name: beside-recursion}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: one, template: work}], [{name: two, template: work}]]
  - name: work
    container: {image: alpine, command: ["true"]}`)
	for name := range bombs {
		done := e.WaitCompleted(name)
		if done.Status.Phase != wfv1.WorkflowError || !strings.Contains(done.Status.Message, "Maximum recursion depth exceeded (100 nested templates)") {
			t.Errorf("%s = %s %q, want Error at the recursion depth", name, done.Status.Phase, done.Status.Message)
		}
		if n := len(done.Status.Nodes); n > 5*engine.MaxTemplateDepth {
			t.Errorf("%s has %d nodes: its expansion went on past the first path to the depth", name, n)
		}
	}
	if got := e.WaitCompleted(ok.Name); got.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the workflow beside the recursive ones ended %s", got.Status.Phase)
	}
}

func TestLegacySpecSuspendHoldsNewStepsUntilCleared(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"held": {Hold: release}}}})
	wf := e.Submit(`
metadata: {name: legacy-suspend}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: first, template: held}], [{name: second, template: ok}]]
  - name: held
    container: {image: alpine, command: ["true"]}
  - name: ok
    container: {image: alpine, command: ["true"]}`)
	e.WaitFor(wf.Name, "running its first step", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "legacy-suspend[0].first")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	e.patchSpec(wf.Name, `{"spec":{"suspend":true}}`)
	e.WaitFor(wf.Name, "seen suspended", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Spec.Suspend != nil })
	close(release)
	// The running step finishes, but the next one does not start while suspended.
	held := e.WaitFor(wf.Name, "finishing its first step", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "legacy-suspend[0].first")
		return n != nil && n.Phase == wfv1.NodeSucceeded
	})
	if harness.NodeByName(held, "legacy-suspend[1].second") != nil || held.Status.Phase != wfv1.WorkflowRunning {
		t.Fatalf("a suspended workflow started its next step:\n%s", harness.Describe(held))
	}
	e.patchSpec(wf.Name, `{"spec":{"suspend":null}}`)
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded || harness.NodeByName(done, "legacy-suspend[1].second") == nil {
		t.Errorf("after resuming: %s\n%s", done.Status.Phase, harness.Describe(done))
	}
}

func TestAnUndecodableWorkflowFailsClearlyAndItsPodsAreReleased(t *testing.T) {
	e := newEnv(t, envOptions{})
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": map[string]any{"name": "garbled"},
		"spec":     map[string]any{"entrypoint": "main", "templates": "not-a-list"},
	}}
	created, err := dynamic.NewForConfigOrDie(cp.Config()).Resource(wfv1.SchemeGroupVersion.WithResource("workflows")).
		Namespace(e.Namespace).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pod it owns, holding the status finalizer (as if created before the spec was garbled): the pod the
	// controller creates for a one-pod workflow's root node (podidentity: name, node-id, owner, label).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "garbled", Finalizers: []string{common.FinalizerPodStatus},
		Labels:          map[string]string{common.LabelKeyWorkflow: "garbled"},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: "garbled"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "garbled", UID: created.GetUID()}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	if _, err := e.Kube.CoreV1().Pods(e.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// argo's typed client cannot read it either: look at the raw object.
	var phase, message string
	err = wait.PollUntilContextTimeout(t.Context(), 25*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := dynamic.NewForConfigOrDie(cp.Config()).Resource(wfv1.SchemeGroupVersion.WithResource("workflows")).
			Namespace(e.Namespace).Get(ctx, "garbled", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase, _, _ = unstructured.NestedString(got.Object, "status", "phase")
		message, _, _ = unstructured.NestedString(got.Object, "status", "message")
		return phase != "", nil
	})
	if err != nil || phase != string(wfv1.WorkflowFailed) || !strings.HasPrefix(message, "cannot unmarshall spec: ") {
		t.Errorf("workflow = %s %q (%v), want Failed \"cannot unmarshall spec: ...\"", phase, message, err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 25*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && !slices.Contains(p.Finalizers, common.FinalizerPodStatus), nil
	})
	if err != nil {
		t.Errorf("the undecodable workflow's pod kept its finalizer: %v", err)
	}
}
