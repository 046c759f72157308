package controller

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/engine"
)

// collectAndExpire follows a persisted pass (and every look at a completed workflow, so both survive a
// restart): podGC for the workflow's pods, then its ttlStrategy. It returns when the next of them is due.
func (c *Controller) collectAndExpire(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) (time.Duration, error) {
	gcAfter, err := c.podgc.Collect(ctx, wf, pods)
	if err != nil {
		return 0, err
	}
	ttlAfter, err := c.expire(ctx, wf)
	if err != nil {
		return 0, err
	}
	if gcAfter == 0 || (ttlAfter > 0 && ttlAfter < gcAfter) {
		return ttlAfter, nil
	}
	return gcAfter, nil
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
