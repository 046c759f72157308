//go:build realnode

package e2ereal_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
	"github.com/wfguard/wfguard/test/realnode"
)

// simPrefix names the namespaces the simulated node serves; the real node's binder leaves them alone.
const simPrefix = "sim"

// newSimEnv is newEnv with the simulated node (sandbox/simnode) in place of the real one.
func newSimEnv(t *testing.T, script simnode.Script) *env {
	t.Helper()
	if unfit != "" {
		t.Skip(unfit)
	}
	ns := harness.Namespace(t, cp.Config(), simPrefix)
	e := envFor(t, ns)
	run := harness.Start(t, cp.Config(), controller.Options{Namespace: ns, StatusFinalizer: true, Workers: 4,
		Validate: controller.ArgoValidator(e.Argo), Logger: harness.Logger(t)}, simnode.Options{Namespace: ns, Script: script})
	e.ctrl = run.Controller
	return e
}

// The simulator must stay honest: the same workflow, run on the simulated node (scripted with what the
// programs print) and on the real node, ends with the same phases, messages, node outputs and task results.
func TestTheSimulatedNodeMatchesTheRealOne(t *testing.T) {
	result := "42"
	for _, tc := range []struct {
		name     string
		manifest string
		script   simnode.Script
	}{
		{"a script result and a file parameter passed on", `
metadata: {name: parity-outputs}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {parameters: [{name: word, value: "{{steps.produce.outputs.parameters.word}}"}, {name: result, value: "{{steps.produce.outputs.result}}"}]}
  - name: produce
    script:
      image: busybox:1.35
      command: [sh]
      source: |
        echo -n bird > /tmp/word.txt
        echo 42
    outputs: {parameters: [{name: word, valueFrom: {path: /tmp/word.txt}}]}
  - name: consume
    inputs: {parameters: [{name: word}, {name: result}]}
    container: {image: busybox:1.35, command: [sh, -c, 'echo {{inputs.parameters.word}}']}
`, simnode.Script{ByTemplate: map[string]simnode.Behavior{"produce": {Result: &result, Parameters: map[string]string{"word": "bird"}}}}},
		{"a failing step with an exit handler", `
metadata: {name: parity-failing}
spec:
  entrypoint: main
  onExit: report
  templates:
  - name: main
    steps:
    - - {name: fail, template: fail}
    - - {name: never, template: report}
  - name: fail
    container: {image: busybox:1.35, command: [sh, -c, 'exit 3']}
  - name: report
    container: {image: busybox:1.35, command: [sh, -c, 'echo done']}
`, simnode.Script{ByTemplate: map[string]simnode.Behavior{"fail": {ExitCode: 3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real, sim := newEnv(t, controller.Options{}), newSimEnv(t, tc.script)
			realWf, simWf := real.Submit(tc.manifest), sim.Submit(tc.manifest)
			realDone, simDone := real.WaitCompleted(realWf.Name), sim.WaitCompleted(simWf.Name)
			real.assertPodsRanOn(realnode.NodeName)
			sim.assertPodsRanOn(simnode.DefaultNodeName)
			realSeen := real.observed(realDone)
			if len(realSeen.TaskResults) == 0 || len(realSeen.Nodes) < 3 {
				t.Fatalf("the real run observed too little to compare: %+v", realSeen)
			}
			if diff := differences(realSeen, sim.observed(simDone)); diff != "" {
				t.Errorf("the real and the simulated node differ:\n%s", diff)
			}
		})
	}
}

// assertPodsRanOn checks that every pod of the env's namespace was bound to node.
func (e *env) assertPodsRanOn(node string) {
	e.t.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		e.t.Errorf("no pods in %s", e.Namespace)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node {
			e.t.Errorf("pod %s/%s ran on %q, want %q", p.Namespace, p.Name, p.Spec.NodeName, node)
		}
	}
}

// observation is what the parity check compares: the workflow's phase and message, each node's type,
// phase, message and outputs, and each task result's completion label and outputs as last written, keyed by
// node name.
type observation struct {
	Phase, Message string
	Nodes          map[string]string
	TaskResults    map[string]string
}

func (e *env) observed(wf *wfv1.Workflow) observation {
	e.t.Helper()
	o := observation{Phase: string(wf.Status.Phase), Message: wf.Status.Message, Nodes: map[string]string{}, TaskResults: map[string]string{}}
	names := map[string]string{}
	for _, n := range wf.Status.Nodes {
		names[n.ID] = n.Name
		o.Nodes[n.Name] = fmt.Sprintf("%s %s %q outputs=%s", n.Type, n.Phase, n.Message, outputsOf(n.Outputs))
	}
	// As written: the controller deletes a completed workflow's results.
	e.results.mu.Lock()
	defer e.results.mu.Unlock()
	for _, r := range e.results.last {
		o.TaskResults[names[r.Name]] = fmt.Sprintf("completed=%s outputs=%s",
			r.Labels["workflows.argoproj.io/report-outputs-completed"], outputsOf(r.Outputs))
	}
	return o
}

// outputsOf prints outputs in a stable order: result, exit code, parameters by name, artifacts by name.
func outputsOf(o *wfv1.Outputs) string {
	if o == nil {
		return "none"
	}
	var parts []string
	if o.Result != nil {
		parts = append(parts, "result="+*o.Result)
	}
	if o.ExitCode != nil {
		parts = append(parts, "exitCode="+*o.ExitCode)
	}
	for _, p := range o.Parameters {
		v := "<nil>"
		if p.Value != nil {
			v = p.Value.String()
		}
		parts = append(parts, "param "+p.Name+"="+v)
	}
	for _, a := range o.Artifacts {
		parts = append(parts, "artifact "+a.Name)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// differences lists, one a line, what differs between the real node's observation and the simulator's.
func differences(real, sim observation) string {
	var lines []string
	add := func(what, r, s string) {
		if r != s {
			lines = append(lines, fmt.Sprintf("%s:\n  real: %s\n  sim:  %s", what, r, s))
		}
	}
	add("workflow phase", real.Phase, sim.Phase)
	add("workflow message", real.Message, sim.Message)
	for _, kind := range []struct {
		name      string
		real, sim map[string]string
	}{{"node", real.Nodes, sim.Nodes}, {"task result of", real.TaskResults, sim.TaskResults}} {
		keys := map[string]bool{}
		for k := range kind.real {
			keys[k] = true
		}
		for k := range kind.sim {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			r, ok := kind.real[k]
			if !ok {
				r = "<none>"
			}
			s, ok := kind.sim[k]
			if !ok {
				s = "<none>"
			}
			add(kind.name+" "+k, r, s)
		}
	}
	return strings.Join(lines, "\n")
}
