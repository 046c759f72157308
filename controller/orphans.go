package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/podidentity"
)

// orphaned reports whether a pod holding our finalizer belongs to no workflow in the cache. Identity is by
// UID, so a new workflow of the same name never adopts (nor frees) an old one's pods. The workflow
// informer holds every workflow of our instance, completed ones included. Only a pod the controller
// created (podidentity, against the workflow its ownerReference names, in the pod's own namespace), or such
// a pod whose ownerReference was removed (podidentity.LostItsOwner), is an orphan: a pod that names a
// workflow UID living in another namespace, or whose name and node ID disagree, is not ours to release.
func (c *Controller) orphaned(pod *corev1.Pod) bool {
	if !slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
		return false
	}
	owner, ok := podidentity.ClaimedOwner(pod)
	if !ok {
		// Its workflow was deleted with orphan propagation: nothing will ever capture it.
		return podidentity.LostItsOwner(pod)
	}
	objs, err := c.inf.workflows.GetIndexer().ByIndex(IndexWorkflowUID, string(owner.UID))
	if err != nil {
		return false
	}
	for _, o := range objs {
		if wf, ok := o.(metav1.Object); ok && wf.GetNamespace() != pod.Namespace {
			c.ours(podidentity.Owner{Namespace: wf.GetNamespace(), Name: wf.GetName(), UID: wf.GetUID()}, nil, pod) // reports it
			return false
		}
	}
	return len(objs) == 0 && c.ours(owner, nil, pod)
}

// releaseOrphans is the orphan path of a key: pods labelled for this workflow name, in its namespace
// only, whose owning workflow (by UID) is gone, lose the finalizer.
func (c *Controller) releaseOrphans(ctx context.Context, key string) error {
	return c.releaseIndexed(ctx, IndexWorkflowKey, key, c.orphaned, releaseOrphaned)
}

// releaseIndexed releases the cached pods under index=value that match, skipping those already released.
func (c *Controller) releaseIndexed(ctx context.Context, index, value string, match func(*corev1.Pod) bool, reason string) error {
	objs, err := c.inf.pods.GetIndexer().ByIndex(index, value)
	if err != nil {
		return err
	}
	var due []*corev1.Pod
	for _, o := range objs {
		if pod := o.(*corev1.Pod); match(pod) && !c.released.Pending(pod) {
			due = append(due, pod)
		}
	}
	return c.releaseAll(ctx, due, reason)
}

// releaseParallelism bounds concurrent finalizer patches within one pass (the client's QPS bounds the rest).
const releaseParallelism = 16

// releaseAll releases pods concurrently; a workflow's thousand pods need not wait on each other.
func (c *Controller) releaseAll(ctx context.Context, pods []*corev1.Pod, reason string) error {
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, releaseParallelism)
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.release(ctx, pod, reason); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sweepOrphans periodically enqueues the workflow key of every orphaned pod still holding the finalizer,
// and refreshes the held-pods gauge. It covers what events can miss (a controller restart is covered by the
// initial list, whose Add events enqueue every pod's workflow).
func (c *Controller) sweepOrphans(ctx context.Context) {
	if c.opts.OrphanSweepInterval <= 0 {
		return
	}
	wait.UntilWithContext(ctx, func(context.Context) {
		held := map[string]int{}
		now := c.clock.Now()
		for _, o := range c.inf.pods.GetStore().List() {
			pod := o.(*corev1.Pod)
			if !slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
				continue
			}
			held[ageBucket(now.Sub(pod.CreationTimestamp.Time))]++
			if c.orphaned(pod) {
				if key := workflowKeyOf(pod); key != "" {
					c.queue.Add(key)
				}
			}
		}
		for _, b := range ageBuckets {
			c.metrics.heldPods.WithLabelValues(b.label).Set(float64(held[b.label]))
		}
	}, c.opts.OrphanSweepInterval)
}

var ageBuckets = []struct {
	max   time.Duration
	label string
}{{time.Minute, "lt_1m"}, {10 * time.Minute, "lt_10m"}, {time.Hour, "lt_1h"}, {1<<63 - 1, "ge_1h"}}

func ageBucket(age time.Duration) string {
	for _, b := range ageBuckets {
		if age < b.max {
			return b.label
		}
	}
	return ageBuckets[len(ageBuckets)-1].label
}
