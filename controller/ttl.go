package controller

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/taskresult"
)

// collectAndExpire follows a persisted pass (and every look at a completed workflow, so all three survive
// a restart): a completed workflow's task results go, podGC for the workflow's pods, then its ttlStrategy.
// It returns when the next of them is due.
func (c *Controller) collectAndExpire(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) (time.Duration, error) {
	resultsAfter := c.deleteCompletedResults(ctx, wf)
	gcAfter, err := c.podgc.Collect(ctx, wf, pods)
	if err != nil {
		return 0, err
	}
	ttlAfter, err := c.expire(ctx, wf)
	if err != nil {
		return 0, err
	}
	return soonest(resultsAfter, gcAfter, ttlAfter), nil
}

// soonest is the shortest of the positive durations, 0 when there is none.
func soonest(after ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range after {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// resultDeleteRetry is how soon a completed workflow's task results are tried again after their deletion
// failed.
const resultDeleteRetry = 10 * time.Second

// deleteCompletedResults deletes a completed workflow's own task results once its completion is stored, as
// argo does (taskresult.Remover.Completed): the status holds all they reported, and a retry of the workflow
// (argo's own, which deletes only pods) must find no result of a previous run under a node's name. It runs
// on every look at a completed workflow, so a failed deletion, a crash before it, and a result written after
// the completion are dealt with on the next look. A failure is logged and evented, and tried again after
// resultDeleteRetry: it never holds up podGC or ttlStrategy.
func (c *Controller) deleteCompletedResults(ctx context.Context, wf *wfv1.Workflow) time.Duration {
	if wf.Labels[common.LabelKeyCompleted] != "true" {
		return 0
	}
	key := wf.Namespace + "/" + wf.Name
	n, err := c.resultRemover.Completed(ctx, key, wf, c.resultsOf(key))
	if err != nil {
		c.log.Warn("deleting the task results of a completed workflow", "workflow", key, "err", err)
		c.recorder.Event(wf, corev1.EventTypeWarning, taskresult.ReasonDeleteFailed,
			fmt.Sprintf("Its task results could not be deleted (tried again in %s): %v", resultDeleteRetry, err))
		return resultDeleteRetry
	}
	if n > 0 {
		c.log.Debug("deleted the task results of a completed workflow", "workflow", key, "results", n)
	}
	return 0
}

// expire deletes a completed workflow whose ttlStrategy is due (its pods go by owner-reference garbage
// collection; the orphan path releases any status finalizer left), or returns how long until it is due.
// The due time comes from status.finishedAt and the injected clock, so a restart only re-derives it.
func (c *Controller) expire(ctx context.Context, wf *wfv1.Workflow) (time.Duration, error) {
	due, ok := engine.TTLExpiry(wf)
	if !ok {
		return 0, nil
	}
	if left := due.Sub(c.clock.Now()); left > 0 {
		return left, nil
	}
	uid := wf.UID // never a new workflow of the same name
	background := metav1.DeletePropagationBackground
	err := c.argo.ArgoprojV1alpha1().Workflows(wf.Namespace).Delete(ctx, wf.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return 0, nil // gone already, or replaced by another workflow of the same name
	case err != nil:
		return 0, fmt.Errorf("deleting workflow %s/%s after its ttlStrategy: %w", wf.Namespace, wf.Name, err)
	}
	c.log.Info("deleted a finished workflow: its ttlStrategy expired", "workflow", wf.Namespace+"/"+wf.Name,
		"phase", wf.Status.Phase, "finishedAt", wf.Status.FinishedAt.UTC().Format(time.RFC3339))
	return 0, nil
}
