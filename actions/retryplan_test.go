package actions

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// naiveSeeds is the retry plan's seeds with "a success follows this node" computed the obvious way, one walk
// per node: the reference the memoized computation must agree with.
func naiveSeeds(t *nodeTree, selected map[string]bool) []string {
	return t.seedsWhere(selected, func(seed string) bool {
		for d := range t.descendants(seed) {
			if d != seed && !selected[d] && t.wf.Status.Nodes[d].Phase == wfv1.NodeSucceeded {
				return true
			}
		}
		return false
	})
}

// randomTree is a workflow of n nodes whose children links form a random DAG (and, now and then, a cycle, as
// a rewritten status may): phases, types and selection at random.
func randomTree(rng *rand.Rand, n int) (*wfv1.Workflow, map[string]bool) {
	var nodes []wfv1.NodeStatus
	phases := []wfv1.NodePhase{wfv1.NodeSucceeded, wfv1.NodeFailed, wfv1.NodeError, wfv1.NodeSkipped}
	types := []wfv1.NodeType{wfv1.NodeTypePod, wfv1.NodeTypeSteps, wfv1.NodeTypeStepGroup, wfv1.NodeTypeRetry}
	for i := range n {
		var children []string
		for range rng.IntN(3) {
			if j := i + 1 + rng.IntN(n); j < n {
				children = append(children, fmt.Sprint("n", j))
			}
		}
		if rng.IntN(50) == 0 && i > 0 {
			children = append(children, fmt.Sprint("n", rng.IntN(i))) // a cycle
		}
		name := "wf"
		if i > 0 {
			name = fmt.Sprintf("wf.n%d", i)
		}
		nodes = append(nodes, treeNode(fmt.Sprint("n", i), name, types[rng.IntN(len(types))], phases[rng.IntN(len(phases))], "", children...))
	}
	wf := completedWorkflow(wfv1.WorkflowFailed, nodes...)
	selected := map[string]bool{}
	for range rng.IntN(3) {
		selected[fmt.Sprint("n", rng.IntN(n))] = true
	}
	return wf, selected
}

func TestTheRetryPlanAgreesWithWalkingEveryNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 7))
	for range 300 {
		wf, selected := randomTree(rng, 2+rng.IntN(60))
		tree := &nodeTree{wf: wf, parents: map[string][]string{}}
		for _, id := range sortedIDs(wf.Status.Nodes) {
			for _, c := range wf.Status.Nodes[id].Children {
				tree.parents[c] = append(tree.parents[c], id)
			}
		}
		got, want := tree.retrySeeds(selected), naiveSeeds(tree, selected)
		if !slices.Equal(got, want) {
			t.Fatalf("seeds = %v, walking every node gives %v", got, want)
		}
		removed, _ := tree.plan(got)
		naive := map[string]bool{}
		for _, s := range got {
			maps.Copy(naive, tree.descendants(s))
		}
		for id, n := range wf.Status.Nodes {
			if tree.onExit(&n) {
				naive[id] = true
			}
		}
		if !maps.Equal(removed, naive) {
			t.Fatalf("removed = %v, the union of each seed's descendants is %v", removed, naive)
		}
	}
}

// wideFailure is a completed workflow of fan failed pods that all lead to one chain of length succeeded
// nodes: argo's retry walks the chain once per failed pod.
func wideFailure(fan, length int) *wfv1.Workflow {
	var nodes []wfv1.NodeStatus
	chain := func(i int) string { return fmt.Sprint("c", i) }
	var pods []string
	for i := range fan {
		pods = append(pods, fmt.Sprint("p", i))
		nodes = append(nodes, treeNode(pods[i], fmt.Sprintf("wf.p%d", i), wfv1.NodeTypePod, wfv1.NodeFailed, "wf", chain(0)))
	}
	for i := range length {
		var next []string
		if i+1 < length {
			next = []string{chain(i + 1)}
		}
		nodes = append(nodes, treeNode(chain(i), fmt.Sprintf("wf.c%d", i), wfv1.NodeTypePod, wfv1.NodeFailed, "wf", next...))
	}
	nodes = append(nodes, treeNode("wf", "wf", wfv1.NodeTypeSteps, wfv1.NodeFailed, "", pods...))
	return completedWorkflow(wfv1.WorkflowFailed, nodes...)
}

// BenchmarkPlanningARetryOfAWideFailure: 2,000 failed pods before a chain of 2,000 nodes. Walking the chain
// per failed pod made the plan quadratic in what a status's writer shapes (issue #44 review).
func BenchmarkPlanningARetryOfAWideFailure(b *testing.B) {
	wf := wideFailure(2000, 2000)
	for b.Loop() {
		tree, err := newNodeTree(wf)
		if err != nil {
			b.Fatal(err)
		}
		tree.plan(tree.retrySeeds(nil))
	}
}
