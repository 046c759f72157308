package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Test hooks for package controller_test, whose tests run the controller through test/harness (which
// package controller cannot import: harness → sandbox → controller). Each exposes one piece of state or
// one step the tests assert on; nothing here changes the controller.

// StaleRequeue is the quiet requeue of a pass that skipped a cache copy older than our last write.
const StaleRequeue = staleRequeue

// WorkflowCache is the workflow informer's store, which a test may read or overwrite (a lagging watch).
func (c *Controller) WorkflowCache() cache.Indexer { return c.inf.workflows.GetIndexer() }

// LastWritten is the resourceVersion of the controller's last write of the workflow with uid ("" if none):
// what the stale-cache guard compares cache copies with.
func (c *Controller) LastWritten(uid types.UID) string {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	return c.written[uid].resourceVersion
}

// HoldsOwnWrite reports whether the controller keeps the object its last write of the workflow with uid
// stored, because its informer has not delivered that write yet (a pass would start from it).
func (c *Controller) HoldsOwnWrite(uid types.UID) bool {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	return c.written[uid].stored != nil
}

// Reconcile runs one pass of key outside the workers, returning its requeue delay.
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	return c.reconcile(ctx, key)
}

// MarkError is what a panicked pass does to its workflow (markError).
func (c *Controller) MarkError(ctx context.Context, key, msg string) (bool, error) {
	return c.markError(ctx, key, msg)
}

// Requeues is how many times key went back through the queue's rate limiter since it was last forgotten.
func (c *Controller) Requeues(key string) int { return c.queue.NumRequeues(key) }
