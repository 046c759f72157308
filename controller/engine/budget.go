package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// MaxNodesPerPass bounds the nodes one pass creates. A template may expand without end (a steps group that
// calls its own template twice doubles at every level); past the bound the pass stops starting templates,
// is persisted with what it made, and the workflow continues BudgetRequeue later, behind every other key,
// so one workflow's expansion never holds a worker for long. A legitimate fan-out larger than the bound
// starts over several passes.
const MaxNodesPerPass = 1000

// BudgetRequeue is when a workflow whose pass spent MaxNodesPerPass continues.
const BudgetRequeue = time.Second

// budgetSpent reports whether the pass has created its share of nodes; it asks for the next pass.
func (p *Pass) budgetSpent() bool {
	if p.created < MaxNodesPerPass {
		return false
	}
	p.requeueBy(p.Now.Add(BudgetRequeue))
	return true
}

// recursionError is a template nested deeper than MaxTemplateDepth. It ends the workflow rather than the
// node: argo errors the node and goes on with its siblings, so a group that calls its own template twice
// expands 2^100 nodes before every branch has reached the depth.
type recursionError struct{ node string }

func (e *recursionError) Error() string {
	return fmt.Sprintf("Maximum recursion depth exceeded (%d nested templates) at node %s: a template calls itself without end", MaxTemplateDepth, e.node)
}

// abortsPass reports whether a template's error stops the whole pass instead of deciding a node: a transient
// API error (the pass is retried) or a recursion past the depth (the workflow ends).
func abortsPass(err error) bool {
	var api *apiError
	var rec *recursionError
	return errors.As(err, &api) || errors.As(err, &rec)
}

// passCancelled is the error of a template reached after the pass's context ended (its deadline): the
// engine stops there, and the pass is retried as after any API error.
func passCancelled(ctx context.Context, node string) error {
	if err := ctx.Err(); err != nil {
		return &apiError{fmt.Errorf("stopping the pass at node %s: %w", node, err)}
	}
	return nil
}

// endOnRecursion completes the workflow Error when err is a recursionError, saying where; any other error
// is returned as it is.
func (e *Engine) endOnRecursion(p *Pass, err error) error {
	var rec *recursionError
	if !errors.As(err, &rec) {
		return err
	}
	e.completeWorkflow(p, wfv1.WorkflowError, rec.Error())
	return nil
}
