package engine

import (
	"context"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// dagTemplate runs a DAG template: each task once its dependencies are fulfilled.
type dagTemplate struct{}

func (dagTemplate) run(ctx context.Context, e *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error) {
	n = c.scopeNode(n, wfv1.NodeTypeDAG)
	defer c.p.enter(c.call.target(c.p.base))() // its tasks name templates of the template's own base
	return c.p.endScope(e.executeDAG(ctx, c.p, n, c.resolved))
}
