package engine

import (
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

const outboundMeta = "metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}\n"

const outboundLeaves = `
  - {name: work, container: {image: alpine, command: [echo]}}
  - {name: flaky, retryStrategy: {limit: 1}, container: {image: alpine, command: [echo]}}
  - {name: sub, steps: [[{name: x, template: work}]]}`

// TestSuccessorsAreDrawnFromOutboundNodesAsArgosGraph: argo's clients and UI draw a workflow from its nodes'
// children and outboundNodes; a successor hangs under what its predecessor ended in (a retry's last attempt,
// a loop's iterations, a nested template's last nodes), and a steps or DAG node records those nodes.
func TestSuccessorsAreDrawnFromOutboundNodesAsArgosGraph(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		main     string
		edges    []string            // "parent > child" by node name, each present
		notEdges []string            // each absent
		outbound map[string][]string // node name → its outboundNodes by name
	}{
		{"a step after a retried step hangs under the retry's last attempt, not the retry node",
			`{name: main, steps: [[{name: a, template: flaky}], [{name: b, template: work}]]}`,
			[]string{"wf[0].a > wf[0].a(0)", "wf[0].a(0) > wf[1]"}, []string{"wf[0].a > wf[1]"},
			map[string][]string{"wf": {"wf[1].b"}}},
		{"a step after a nested steps template hangs under its last nodes, which it records",
			`{name: main, steps: [[{name: inner, template: sub}], [{name: b, template: work}]]}`,
			[]string{"wf[0].inner[0].x > wf[1]"}, []string{"wf[0].inner > wf[1]"},
			map[string][]string{"wf[0].inner": {"wf[0].inner[0].x"}, "wf": {"wf[1].b"}}},
		{"a step after a container set hangs under the set's last containers",
			`{name: main, steps: [[{name: s, template: set}], [{name: b, template: work}]]}
  - {name: set, containerSet: {containers: [{name: a, image: alpine, command: [echo]}, {name: z, image: alpine, command: [echo], dependencies: [a]}]}}`,
			[]string{"wf[0].s > wf[0].s.a", "wf[0].s.a > wf[0].s.z", "wf[0].s.z > wf[1]"}, []string{"wf[0].s > wf[1]", "wf[0].s.a > wf[1]"},
			map[string][]string{"wf": {"wf[1].b"}}},
		{"a DAG task after a retried task hangs under the last attempt",
			`{name: main, dag: {tasks: [{name: A, template: flaky}, {name: B, template: work, depends: A}]}}`,
			[]string{"wf.A(0) > wf.B"}, []string{"wf.A > wf.B"},
			map[string][]string{"wf": {"wf.B"}}},
		{"a DAG task after a loop hangs under every iteration",
			`{name: main, dag: {tasks: [{name: A, template: work, withItems: [1, 2]}, {name: B, template: work, depends: A}]}}`,
			[]string{"wf.A(0:1) > wf.B", "wf.A(1:2) > wf.B"}, []string{"wf.A > wf.B"},
			map[string][]string{"wf": {"wf.B"}}},
		{"a DAG ending in a loop records every iteration as outbound",
			`{name: main, dag: {tasks: [{name: A, template: work, withItems: [1, 2]}]}}`,
			nil, nil, map[string][]string{"wf": {"wf.A(0:1)", "wf.A(1:2)"}}},
	} {
		manifest := outboundMeta + "spec:\n  entrypoint: main\n  templates:\n  - " + tc.main + outboundLeaves + "\n"
		wf, _ := runToEnd(t, &Engine{}, manifest, corev1.PodSucceeded)
		if wf.Status.Phase != wfv1.WorkflowSucceeded {
			t.Fatalf("%s: workflow %s: %s\n%s", tc.sentence, wf.Status.Phase, wf.Status.Message, nodeTree(wf))
		}
		edges := graphEdges(wf)
		for _, e := range tc.edges {
			if !slices.Contains(edges, e) {
				t.Errorf("%s: no edge %q in %v", tc.sentence, e, edges)
			}
		}
		for _, e := range tc.notEdges {
			if slices.Contains(edges, e) {
				t.Errorf("%s: edge %q, which argo does not draw", tc.sentence, e)
			}
		}
		for name, want := range tc.outbound {
			if got := outboundNames(wf, name); !slices.Equal(got, want) {
				t.Errorf("%s: %s outboundNodes = %v, want %v", tc.sentence, name, got, want)
			}
		}
	}
}

func graphEdges(wf *wfv1.Workflow) []string {
	var out []string
	for _, n := range wf.Status.Nodes {
		for _, c := range n.Children {
			out = append(out, n.Name+" > "+wf.Status.Nodes[c].Name)
		}
	}
	slices.Sort(out)
	return out
}

func outboundNames(wf *wfv1.Workflow, name string) []string {
	var out []string
	for _, id := range wf.Status.Nodes[wf.NodeID(name)].OutboundNodes {
		out = append(out, wf.Status.Nodes[id].Name)
	}
	slices.Sort(out)
	return out
}

func TestOutboundNodesOfAHostileStatusEnd(t *testing.T) {
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Nodes: wfv1.Nodes{
		"a": {ID: "a", Type: wfv1.NodeTypeSteps, OutboundNodes: []string{"b"}},
		"b": {ID: "b", Type: wfv1.NodeTypeDAG, OutboundNodes: []string{"a", "missing"}},
		"g": {ID: "g", Type: wfv1.NodeTypeTaskGroup, Children: []string{"g"}},
	}}}
	p := &Pass{WF: wf}
	if got := p.outboundNodes("a"); len(got) != 0 {
		t.Errorf("a cycle of outboundNodes gave %v, want none", got)
	}
	if got := p.outboundNodes("g"); len(got) != 0 {
		t.Errorf("a loop that is its own child gave %v, want none", got)
	}
}
