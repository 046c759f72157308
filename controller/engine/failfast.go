package engine

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// FailFastMessage is argo's message for a steps or DAG template with failFast that stopped starting children.
const FailFastMessage = "template has failed or errored children and failFast enabled"

// failFastHolds reports whether a new node under boundaryID must not start because the boundary's
// template has failFast and one of its children failed or errored, as argo decides before each new child.
// Once none of the boundary's pods is active any more, the boundary node (and, for steps, its latest
// step group) ends Failed with argo's message.
func failFastHolds(p *Pass, boundaryID string) bool {
	boundary := p.nodeByID(boundaryID)
	if boundary == nil {
		return false
	}
	tmpl := p.templateOf(boundary)
	if tmpl == nil || !tmpl.IsFailFast() {
		return false
	}
	unsuccessful := countNodes(p, func(n *wfv1.NodeStatus) bool {
		return n.BoundaryID == boundaryID && n.FailedOrError() &&
			(n.Type == wfv1.NodeTypePod || n.Type == wfv1.NodeTypeSteps || n.Type == wfv1.NodeTypeDAG)
	})
	if unsuccessful == 0 {
		return false
	}
	activePods := countNodes(p, func(n *wfv1.NodeStatus) bool {
		return n.BoundaryID == boundaryID && n.Type == wfv1.NodeTypePod && active(n)
	})
	if activePods == 0 {
		if tmpl.GetType() == wfv1.TemplateTypeSteps {
			if sg := latestStepGroup(p, boundary); sg != nil {
				p.markPhase(sg, wfv1.NodeFailed, FailFastMessage)
			}
		}
		p.markPhase(boundary, wfv1.NodeFailed, FailFastMessage)
	}
	return true
}

// latestStepGroup is the last step group a steps node started.
func latestStepGroup(p *Pass, steps *wfv1.NodeStatus) *wfv1.NodeStatus {
	var latest *wfv1.NodeStatus
	for i := 0; ; i++ {
		sg := p.node(fmt.Sprintf("%s[%d]", steps.Name, i))
		if sg == nil {
			return latest
		}
		latest = sg
	}
}
