package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/podidentity"
	"github.com/wfguard/wfguard/taskresult"
)

// Retry events, mirrored in the workflow's status (phase Pending, then Running, or Error with the message).
const (
	ReasonWorkflowRetried     = "WorkflowRetried"
	ReasonRetryCleanedUp      = "RetryCleanedUp"
	ReasonRetryCleanupTimeout = "RetryCleanupTimeout"
)

// DefaultRetryCleanupTimeout bounds how long a retried workflow waits for the previous run's pods to go.
const DefaultRetryCleanupTimeout = 5 * time.Minute

// retryCompleted applies a Retry to a completed workflow: the retried status and the action's write-ahead
// record go in one write, then the action's outcome is reported. A refused Retry changes nothing; its
// outcome is written and the remaining actions are settled on the next pass.
func (c *Controller) retryCompleted(ctx context.Context, key string, u *unstructured.Unstructured, wf *wfv1.Workflow, ext extstatus.Extensions, a *v1alpha1.WorkflowAction) (time.Duration, error) {
	// A completed workflow is not in the running decode cache; wf and ext may be shared with later passes
	// (completedDecodes): the base and the pass each get their own copies.
	// Its size counts for no cache: 0.
	loaded, err := newDecoded(u.GetResourceVersion(), wf.DeepCopy(), copyExtensions(ext), 0)
	if err != nil {
		return 0, err
	}
	p := c.newPass(key, loaded, wf.DeepCopy(), copyExtensions(ext))
	applied, err := c.drainer.ApplyToCompleted(ctx, key, p.WF, p.Ext, a, p.Now)
	if !applied {
		return retrySoon, err
	}
	p.Events = append(p.Events, engine.Event{Reason: ReasonWorkflowRetried,
		Message: fmt.Sprintf("Workflow retried by %s: %s", a.Name, p.Ext.AppliedActions[len(p.Ext.AppliedActions)-1].Message)})
	outcome, err := c.persist(ctx, p)
	if err != nil {
		return 0, err
	}
	if outcome != written {
		return staleRequeue, nil // another write won: the next pass decides again from it
	}
	c.afterPersist(p, true)
	if err := c.opts.Points.Hit(ctx, faultinject.PointAfterWorkflowPersist); err != nil {
		return 0, err
	}
	return 0, c.drainer.Report(ctx, key, p.WF, p.Ext.AppliedActions)
}

// cleanUpRetry is the retry phase of a running pass: while an applied Retry's cleanup is open, the pods and
// task results of the previous run's removed nodes are deleted; the cleanup closes once the API server and
// the caches hold none of them, and fails the workflow past its bound. Until it closes, execute runs nothing.
// The only error returned is a crash point's: the pass stops there, as a dying process would.
func (c *Controller) cleanUpRetry(ctx context.Context, p *pass) error {
	since := p.Ext.RetryCleanupSince
	if since == nil {
		return nil
	}
	left, err := c.deletePreviousRun(ctx, p)
	switch {
	case err == nil && len(left) == 0:
		p.Ext.RetryCleanupSince = nil
		p.Events = append(p.Events, engine.Event{Reason: ReasonRetryCleanedUp, Message: "The previous run's pods and task results of the retried nodes are gone"})
		return nil
	case errors.Is(err, faultinject.ErrCrash):
		return err
	case err != nil:
		c.log.Warn("cleaning up a retried workflow's previous run", "workflow", p.key, "err", err)
	}
	bound := c.opts.RetryCleanupTimeout
	if p.Now.Sub(since.Time) < bound {
		p.retrySoon()
		return nil
	}
	msg := fmt.Sprintf("retry could not start: the previous run's %v still existed %s after the retry", truncatedList(left), bound)
	if err != nil {
		msg = fmt.Sprintf("retry could not start within %s: %v", bound, err)
	}
	p.Ext.RetryCleanupSince = nil
	c.engine.Fail(&p.Pass, wfv1.WorkflowError, msg)
	p.Events = append(p.Events, engine.Event{Warning: true, Reason: ReasonRetryCleanupTimeout, Message: msg})
	return nil
}

// deletePreviousRun deletes the pods and task results of this workflow that belong to no node of its
// status (the nodes a Retry removed), and returns those still present on the API server or in the caches.
func (c *Controller) deletePreviousRun(ctx context.Context, p *pass) ([]string, error) {
	owner := podidentity.OwnerOf(p.WF)
	selector := labels.Set{common.LabelKeyWorkflow: p.WF.Name}.String()
	pods, err := c.kube.CoreV1().Pods(p.WF.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", p.key, err)
	}
	var left []string
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !c.previousRun(p.WF, owner, pod) {
			continue
		}
		left = append(left, "pod "+pod.Name)
		errs = append(errs, c.deletePreviousPod(ctx, pod))
	}
	if err := c.opts.Points.Hit(ctx, faultinject.PointDuringRetryCleanup); err != nil {
		return nil, err
	}
	results, err := c.argo.ArgoprojV1alpha1().WorkflowTaskResults(p.WF.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("listing task results of %s: %w", p.key, err))...)
	}
	for i := range results.Items {
		r := &results.Items[i]
		if _, current := p.WF.Status.Nodes[r.Name]; current || !taskresult.OwnedBy(r, p.WF) {
			continue
		}
		left = append(left, "task result "+r.Name)
		err := c.argo.ArgoprojV1alpha1().WorkflowTaskResults(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting task result %s/%s of the previous run: %w", r.Namespace, r.Name, err))
		}
	}
	left = append(left, c.cachedPreviousRun(p)...)
	return left, errors.Join(errs...)
}

// previousRun reports whether pod is this workflow's and ran a node its status no longer has.
func (c *Controller) previousRun(wf *wfv1.Workflow, owner podidentity.Owner, pod *corev1.Pod) bool {
	if podidentity.Check(owner, nil, pod) != podidentity.Match {
		return false // not provably this workflow's pod: never ours to delete
	}
	_, current := wf.Status.Nodes[pod.Annotations[common.AnnotationKeyNodeID]]
	return !current
}

// deletePreviousPod releases wfguard's finalizer (the pod's node was persisted completed before the
// retry) and deletes the pod.
func (c *Controller) deletePreviousPod(ctx context.Context, pod *corev1.Pod) error {
	if slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
		if _, err := podfinalizer.RemoveFinalizer(ctx, c.kube, pod); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing the previous run's pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the previous run's pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// cachedPreviousRun lists what the caches still hold of the previous run: a pod or result the API server
// no longer has must also have left the caches before a node of the same name runs again.
func (c *Controller) cachedPreviousRun(p *pass) []string {
	var left []string
	owner := podidentity.OwnerOf(p.WF)
	objs, _ := c.inf.pods.GetIndexer().ByIndex(IndexWorkflowUID, string(p.WF.UID))
	for _, o := range objs {
		if pod := o.(*corev1.Pod); c.previousRun(p.WF, owner, pod) {
			left = append(left, "cached pod "+pod.Name)
		}
	}
	for _, r := range c.resultsOf(p.key) {
		if _, current := p.WF.Status.Nodes[r.Name]; !current && taskresult.OwnedBy(r, p.WF) {
			left = append(left, "cached task result "+r.Name)
		}
	}
	return left
}

// truncatedList names at most five items, so a message about thousands of pods stays readable.
func truncatedList(items []string) string {
	if len(items) <= 5 {
		return fmt.Sprint(items)
	}
	return fmt.Sprintf("%v and %d more", items[:5], len(items)-5)
}
