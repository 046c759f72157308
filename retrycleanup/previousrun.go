package retrycleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/fanout"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/podidentity"
	"github.com/wfguard/wfguard/taskresult"
)

// DeleteParallelism bounds the cleanup's concurrent deletions within one pass, as podgc.CallParallelism
// does podGC's: a retried fan-out's thousand pods need not wait on each other's round trips. The client's
// QPS bounds the rate.
const DeleteParallelism = 16

// deletePreviousRun deletes the pods and task results of this workflow that belong to no node of its
// status (the nodes a Retry removed), and returns those still present on the API server or in the caches.
func (c *Cleaner) deletePreviousRun(ctx context.Context, wf *wfv1.Workflow) ([]string, error) {
	selector := labels.Set{common.LabelKeyWorkflow: wf.Name}.String()
	pods, err := c.previousPods(ctx, wf, selector)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, pod := range pods {
		left = append(left, "pod "+pod.Name)
	}
	errs := fanout.Each(ctx, DeleteParallelism, len(pods), func(i int) error { return c.deletePod(ctx, pods[i]) })
	if err := c.cfg.Points.Hit(ctx, faultinject.PointDuringRetryCleanup); err != nil {
		return nil, err
	}
	results, err := c.previousResults(ctx, wf, selector)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	for _, r := range results {
		left = append(left, "task result "+r.Name)
	}
	errs = append(errs, fanout.Each(ctx, DeleteParallelism, len(results), func(i int) error { return c.deleteResult(ctx, results[i]) })...)
	left = append(left, c.cachedPreviousRun(wf)...)
	return left, errors.Join(errs...)
}

// previousPods lists the workflow's pods on the API server that ran a node its status no longer has.
func (c *Cleaner) previousPods(ctx context.Context, wf *wfv1.Workflow, selector string) ([]*corev1.Pod, error) {
	list, err := c.cfg.Kube.CoreV1().Pods(wf.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", keyOf(wf), err)
	}
	owner := podidentity.OwnerOf(wf)
	var out []*corev1.Pod
	for i := range list.Items {
		if previousRun(wf, owner, &list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// previousResults lists the workflow's task results on the API server of nodes its status no longer has.
func (c *Cleaner) previousResults(ctx context.Context, wf *wfv1.Workflow, selector string) ([]*wfv1.WorkflowTaskResult, error) {
	list, err := c.cfg.Argo.ArgoprojV1alpha1().WorkflowTaskResults(wf.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing task results of %s: %w", keyOf(wf), err)
	}
	var out []*wfv1.WorkflowTaskResult
	for i := range list.Items {
		if previousResult(wf, &list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// previousRun reports whether pod is this workflow's and ran a node its status no longer has.
func previousRun(wf *wfv1.Workflow, owner podidentity.Owner, pod *corev1.Pod) bool {
	if podidentity.Check(owner, nil, pod) != podidentity.Match {
		return false // not provably this workflow's pod: never ours to delete
	}
	_, current := wf.Status.Nodes[pod.Annotations[common.AnnotationKeyNodeID]]
	return !current
}

// previousResult reports whether r is this workflow's and of a node its status no longer has.
func previousResult(wf *wfv1.Workflow, r *wfv1.WorkflowTaskResult) bool {
	_, current := wf.Status.Nodes[r.Name]
	return !current && taskresult.OwnedBy(r, wf)
}

// deletePod releases wfguard's finalizer (the pod's node was persisted completed before the retry) and
// deletes the pod, if it is still the pod listed (its UID).
func (c *Cleaner) deletePod(ctx context.Context, pod *corev1.Pod) error {
	if slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
		if _, err := podfinalizer.RemoveFinalizer(ctx, c.cfg.Kube, pod); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing the previous run's pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	err := c.cfg.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the previous run's pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// deleteResult deletes a task result of the previous run, if it is still the one listed (its UID).
func (c *Cleaner) deleteResult(ctx context.Context, r *wfv1.WorkflowTaskResult) error {
	err := c.cfg.Argo.ArgoprojV1alpha1().WorkflowTaskResults(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting task result %s/%s of the previous run: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// cachedPreviousRun lists what the caches still hold of the previous run: a pod or result the API server
// no longer has must also have left the caches before a node of the same name runs again.
func (c *Cleaner) cachedPreviousRun(wf *wfv1.Workflow) []string {
	var left []string
	owner := podidentity.OwnerOf(wf)
	pods, _ := c.cfg.Pods.ByIndex(c.cfg.PodsByWorkflowUID, string(wf.UID))
	for _, o := range pods {
		if pod := o.(*corev1.Pod); previousRun(wf, owner, pod) {
			left = append(left, "cached pod "+pod.Name)
		}
	}
	results, _ := c.cfg.Results.ByIndex(c.cfg.ResultsByWorkflowKey, keyOf(wf))
	for _, o := range results {
		if r := o.(*wfv1.WorkflowTaskResult); previousResult(wf, r) {
			left = append(left, "cached task result "+r.Name)
		}
	}
	return left
}
