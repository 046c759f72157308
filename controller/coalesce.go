package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// informationalNodeFields change as a pod runs but decide nothing: no successor, release or outcome
// depends on them before the node's phase changes, which is always written at once.
var informationalNodeFields = []string{"hostNodeName", "outputs", "taskResultSynced", "resourcesDuration", "progress", "podIP"}

// informationalOnly reports whether after differs from before only in informational node fields or in a
// node going from Pending to Running. Such a pass may wait for the coalescing window.
func informationalOnly(before, after *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(decisive(before), decisive(after))
}

// decisive is a copy of u without what informationalOnly ignores.
func decisive(u *unstructured.Unstructured) map[string]any {
	out := u.DeepCopy().Object
	nodes, _, _ := unstructured.NestedMap(out, "status", "nodes")
	for id, raw := range nodes {
		node, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		for _, f := range informationalNodeFields {
			delete(node, f)
		}
		if node["phase"] == "Running" {
			node["phase"] = "Pending"
		}
		nodes[id] = node
	}
	if nodes != nil {
		_ = unstructured.SetNestedMap(out, nodes, "status", "nodes")
	}
	return out
}

// coalesce decides whether an informational-only pass of key is written now. It returns how long to wait
// before writing, 0 meaning write now; the first deferred pass of a key starts the window.
func (c *Controller) coalesce(key string, now time.Time) time.Duration {
	window := c.opts.StatusCoalesceWindow
	if window <= 0 {
		return 0
	}
	c.deferredMu.Lock()
	defer c.deferredMu.Unlock()
	since, ok := c.deferred[key]
	if !ok {
		c.deferred[key] = now
		return window
	}
	if left := window - now.Sub(since); left > 0 {
		return left
	}
	return 0
}

// wroteStatus ends key's coalescing window: everything deferred is in the write just made.
func (c *Controller) wroteStatus(key string) {
	c.deferredMu.Lock()
	delete(c.deferred, key)
	c.deferredMu.Unlock()
}

func (c *Controller) forgetDeferred(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.wroteStatus(key)
	}
}
