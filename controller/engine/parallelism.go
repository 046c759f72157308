package engine

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// parallelismReached reports whether a new node under boundaryID must wait for a slot: spec.parallelism
// bounds the workflow's active pods, a steps or DAG template's parallelism its active children. A node
// counts as active until it leaves Pending/Running, which is after its pod has been seen ending (and
// its result arriving), so the pods actually running never exceed the limit.
func parallelismReached(p *Pass, boundaryID string) bool {
	if limit := p.WF.Spec.Parallelism; limit != nil && countNodes(p, func(n *wfv1.NodeStatus) bool {
		return n.Type == wfv1.NodeTypePod && active(n)
	}) >= int(*limit) {
		return true
	}
	if boundaryID == "" {
		return false
	}
	boundary := p.nodeByID(boundaryID)
	if boundary == nil {
		return false
	}
	tmpl := p.templateOf(boundary)
	if tmpl == nil || tmpl.Parallelism == nil {
		return false
	}
	return countNodes(p, func(n *wfv1.NodeStatus) bool {
		return n.BoundaryID == boundaryID && active(n) &&
			(n.Type == wfv1.NodeTypePod || n.Type == wfv1.NodeTypeSteps || n.Type == wfv1.NodeTypeDAG)
	}) >= int(*tmpl.Parallelism)
}

func active(n *wfv1.NodeStatus) bool {
	return n.Phase == wfv1.NodePending || n.Phase == wfv1.NodeRunning || n.Phase == ""
}

func countNodes(p *Pass, match func(*wfv1.NodeStatus) bool) int {
	count := 0
	for id := range p.WF.Status.Nodes {
		n := p.WF.Status.Nodes[id]
		if match(&n) {
			count++
		}
	}
	return count
}
