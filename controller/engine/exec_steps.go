package engine

import (
	"context"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// stepsTemplate runs a steps template: its groups in order, each group's steps in parallel.
type stepsTemplate struct{}

func (stepsTemplate) run(ctx context.Context, e *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error) {
	n = c.scopeNode(n, wfv1.NodeTypeSteps)
	defer c.p.enter(c.call.target(c.p.base))() // its steps name templates of the template's own base
	return c.p.endScope(e.executeSteps(ctx, c.p, n, c.resolved))
}
