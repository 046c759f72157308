package podfinalizer

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/podidentity"
)

// orphaned reports whether a pod holding our finalizer belongs to no workflow in the cache. Identity is by
// UID, so a new workflow of the same name never adopts (nor frees) an old one's pods. The workflow
// informer holds every workflow of our instance, completed ones included. Only a pod the controller
// created (podidentity, against the workflow its ownerReference names, in the pod's own namespace), or such
// a pod whose ownerReference was removed (podidentity.LostItsOwner), is an orphan: a pod that names a
// workflow UID living in another namespace, or whose name and node ID disagree, is not ours to release.
func (r *Releaser) orphaned(pod *corev1.Pod) bool {
	if !slices.Contains(pod.Finalizers, Finalizer) {
		return false
	}
	owner, ok := podidentity.ClaimedOwner(pod)
	if !ok {
		// Its workflow was deleted with orphan propagation: nothing will ever capture it.
		return podidentity.LostItsOwner(pod)
	}
	objs, err := r.cfg.Workflows.ByIndex(r.cfg.WorkflowsByUID, string(owner.UID))
	if err != nil {
		return false
	}
	for _, o := range objs {
		if wf, ok := o.(metav1.Object); ok && wf.GetNamespace() != pod.Namespace {
			r.cfg.Ours(podidentity.Owner{Namespace: wf.GetNamespace(), Name: wf.GetName(), UID: wf.GetUID()}, pod) // reports it
			return false
		}
	}
	return len(objs) == 0 && r.cfg.Ours(owner, pod)
}

// ReleaseOrphans is the orphan path of a workflow key: pods labelled for this workflow name, in its
// namespace only, whose owning workflow (by UID) is gone, lose the finalizer.
func (r *Releaser) ReleaseOrphans(ctx context.Context, key string) error {
	return r.releaseIndexed(ctx, r.cfg.PodsByWorkflowKey, key, r.orphaned, staysOnceReleased, releaseOrphaned)
}

// staysOnceReleased reports whether an orphan would stay once released, so that only the completed label
// takes it out of the pod cache. One that is being deleted, or that still names its gone workflow (the
// garbage collector deletes it), leaves by itself: the label would only make its patch costlier to the API
// server. argo, too, only removes the finalizer from the pods of a deleted workflow.
func staysOnceReleased(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && podidentity.LostItsOwner(pod)
}

// Sweep periodically enqueues the workflow key of every orphaned pod still holding the finalizer, and
// refreshes the held-pods gauge, until ctx ends. It covers what events can miss (a controller restart is
// covered by the initial list, whose Add events enqueue every pod's workflow).
func (r *Releaser) Sweep(ctx context.Context) {
	if r.cfg.SweepInterval <= 0 {
		return
	}
	wait.UntilWithContext(ctx, func(context.Context) { r.sweepOnce() }, r.cfg.SweepInterval)
}

// sweepOnce is one round of Sweep.
func (r *Releaser) sweepOnce() {
	held := map[string]int{}
	now := r.cfg.Clock.Now()
	for _, o := range append(r.cfg.Pods.List(), r.departed.store.List()...) {
		pod := o.(*corev1.Pod)
		if !slices.Contains(pod.Finalizers, Finalizer) {
			continue
		}
		held[ageBucket(now.Sub(pod.CreationTimestamp.Time))]++
		if r.orphaned(pod) {
			r.cfg.Enqueue(pod)
		}
	}
	for _, b := range ageBuckets {
		r.metrics.heldPods.WithLabelValues(b.label).Set(float64(held[b.label]))
	}
}
