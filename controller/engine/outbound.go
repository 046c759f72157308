package engine

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// outboundNodes are the nodes a successor is drawn from when it follows the node id, as argo's graph has it
// (argo's clients and UI read children and outboundNodes): a leaf is its own; a retry's is its last attempt; a
// loop's (TaskGroup) and a container set's are their children's; a steps or DAG node's are those it
// recorded in outboundNodes (itself when memoized). Nodes are read from the stored status, which a user may
// have edited, so each is visited at most once.
func (p *Pass) outboundNodes(id string) []string {
	return p.outboundFrom(id, map[string]bool{})
}

func (p *Pass) outboundFrom(id string, seen map[string]bool) []string {
	n, ok := p.WF.Status.Nodes[id]
	if !ok || seen[id] {
		return nil
	}
	seen[id] = true
	switch n.Type {
	case wfv1.NodeTypeSkipped, wfv1.NodeTypeSuspend, wfv1.NodeTypeHTTP, wfv1.NodeTypePlugin:
		return []string{id}
	case wfv1.NodeTypePod:
		if !p.runsContainerSet(&n) {
			return []string{id}
		}
		return p.groupOutbound(&n, seen)
	case wfv1.NodeTypeContainer, wfv1.NodeTypeTaskGroup:
		return p.groupOutbound(&n, seen)
	case wfv1.NodeTypeRetry:
		if len(n.Children) > 0 {
			return []string{n.Children[len(n.Children)-1]}
		}
	case wfv1.NodeTypeSteps, wfv1.NodeTypeDAG:
		if n.MemoizationStatus != nil && n.MemoizationStatus.Hit {
			return []string{id}
		}
	}
	var out []string
	for _, o := range n.OutboundNodes {
		out = append(out, p.outboundFrom(o, seen)...)
	}
	return out
}

// groupOutbound is a loop's, a container set's or a container's: its children's outbound nodes, or itself
// without children; a container whose child lies in another boundary is the deepest it reaches.
func (p *Pass) groupOutbound(n *wfv1.NodeStatus, seen map[string]bool) []string {
	if len(n.Children) == 0 {
		return []string{n.ID}
	}
	var out []string
	for _, c := range n.Children {
		child, ok := p.WF.Status.Nodes[c]
		if ok && n.Type == wfv1.NodeTypeContainer && child.BoundaryID != n.BoundaryID {
			out = append(out, n.ID)
			continue
		}
		out = append(out, p.outboundFrom(c, seen)...)
	}
	return out
}

func (p *Pass) runsContainerSet(n *wfv1.NodeStatus) bool {
	t := p.declaredTemplateOf(n)
	return t != nil && t.GetType() == wfv1.TemplateTypeContainerSet
}

// setOutbound records on the node named name the outbound nodes of the nodes ids (a steps node's last step
// group's children, a DAG's target tasks), as argo does when the node completes.
func (p *Pass) setOutbound(name string, ids []string) {
	n := p.node(name)
	if n == nil {
		return
	}
	var out []string
	for _, id := range ids {
		out = append(out, p.outboundNodes(id)...)
	}
	n.OutboundNodes = out
	p.setNode(n)
}
