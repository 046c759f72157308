package controller

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/retrycleanup"
)

// Retry events, mirrored in the workflow's status (phase Pending, then Running, or Error with the message).
// The cleanup's are retrycleanup's.
const (
	ReasonWorkflowRetried     = "WorkflowRetried"
	ReasonRetryCleanedUp      = retrycleanup.ReasonCleanedUp
	ReasonRetryCleanupTimeout = retrycleanup.ReasonTimeout
)

// DefaultRetryCleanupTimeout bounds how long a retried workflow waits for the previous run's pods to go.
const DefaultRetryCleanupTimeout = retrycleanup.DefaultTimeout

// retryCompleted runs a Retry of a completed workflow (retryPhases). A refused Retry changes nothing; its
// outcome is written and the remaining actions are settled on the next pass.
func (c *Controller) retryCompleted(ctx context.Context, key string, u *unstructured.Unstructured, wf *wfv1.Workflow, ext extstatus.Extensions, a *v1alpha1.WorkflowAction) (time.Duration, error) {
	// A completed workflow is not in the running decode cache; wf and ext may be shared with later passes
	// (completedDecodes): the base and the pass each get their own copies.
	// Its size counts for no cache: 0.
	loaded, err := newDecoded(u.GetResourceVersion(), wf.DeepCopy(), copyExtensions(ext), 0)
	if err != nil {
		return 0, err
	}
	return c.runFlow(ctx, c.newPass(key, loaded, wf.DeepCopy(), copyExtensions(ext)), c.retryPhases(a))
}

// applyRetry is the Retry phase of a completed workflow's pass: the retried status and the action's
// write-ahead record, in memory.
func (c *Controller) applyRetry(ctx context.Context, p *pass, a *v1alpha1.WorkflowAction) error {
	applied, err := c.drainer.ApplyToCompleted(ctx, p.key, p.WF, p.Ext, a, p.Now)
	if !applied {
		p.end(retrySoon)
		return err
	}
	p.Events = append(p.Events, engine.Event{Reason: ReasonWorkflowRetried,
		Message: fmt.Sprintf("Workflow retried by %s: %s", a.Name, p.Ext.AppliedActions[len(p.Ext.AppliedActions)-1].Message)})
	return nil
}

// cleanUpRetry is the retry phase of a running pass (retrycleanup.Cleaner): while an applied Retry's cleanup
// is open, the previous run's pods and task results of the removed nodes are deleted, and execute runs
// nothing; past its bound the workflow fails. The only error returned is a crash point's: the pass stops
// there, as a dying process would.
func (c *Controller) cleanUpRetry(ctx context.Context, p *pass) error {
	r, err := c.retryCleanup.CleanUp(ctx, p.WF, p.Ext, p.Now)
	switch r.Outcome {
	case retrycleanup.Open:
		p.retrySoon()
	case retrycleanup.CleanedUp:
		p.Events = append(p.Events, engine.Event{Reason: ReasonRetryCleanedUp, Message: r.Message})
	case retrycleanup.TimedOut:
		c.engine.Fail(&p.Pass, wfv1.WorkflowError, r.Message)
		p.Events = append(p.Events, engine.Event{Warning: true, Reason: ReasonRetryCleanupTimeout, Message: r.Message})
	}
	return err
}
