package controller

import (
	"maps"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podidentity"
)

// informationalNodeFields change as a pod runs but decide nothing: no successor, release or outcome
// depends on them before the node's phase changes, which is always written at once. taskResultSynced is
// informational only while the node is not completed (decisive keeps it for a completed node).
var informationalNodeFields = []string{"hostNodeName", "outputs", "taskResultSynced", "resourcesDuration", "progress", "podIP"}

// informationalOnly reports whether after differs from before only in informational node fields or in a
// node going from Pending to Running. Such a pass may wait for the coalescing window. It compares in place,
// without copies: every pass that changed something pays it, and copying both workflows was 8% of the
// controller's allocations under load.
func informationalOnly(before, after *unstructured.Unstructured) bool {
	return sameExcept(before.Object, after.Object, nil, func(key string, b, a any) bool {
		if key == "status" {
			return sameStatus(b, a)
		}
		return equality.Semantic.DeepEqual(b, a)
	})
}

// sameStatus compares two status values, their nodes by sameNode.
func sameStatus(before, after any) bool {
	b, bok := before.(map[string]any)
	a, aok := after.(map[string]any)
	if !bok || !aok {
		return equality.Semantic.DeepEqual(before, after)
	}
	return sameExcept(b, a, nil, func(key string, bv, av any) bool {
		if key != "nodes" {
			return equality.Semantic.DeepEqual(bv, av)
		}
		bn, bok := bv.(map[string]any)
		an, aok := av.(map[string]any)
		if !bok || !aok {
			return equality.Semantic.DeepEqual(bv, av)
		}
		return sameExcept(bn, an, nil, func(_ string, b, a any) bool { return sameNode(b, a) })
	})
}

// sameNode compares two nodes without their informational fields, a Running phase counting as Pending.
func sameNode(before, after any) bool {
	b, bok := before.(map[string]any)
	a, aok := after.(map[string]any)
	if !bok || !aok {
		return equality.Semantic.DeepEqual(before, after)
	}
	bp, bHas := decisivePhase(b)
	ap, aHas := decisivePhase(a)
	if bHas != aHas || !equality.Semantic.DeepEqual(bp, ap) {
		return false
	}
	// Equal phases: both nodes are completed or neither is.
	phase, _ := b["phase"].(string)
	completed := wfv1.NodePhase(phase).Completed()
	skip := func(key string) bool {
		if key == "phase" {
			return true // compared above
		}
		if key == "taskResultSynced" && completed {
			// A completed node whose gate opens becomes fulfilled: successors, its pod's release and
			// podGC follow from it, so it is written at once (I5).
			return false
		}
		return slices.Contains(informationalNodeFields, key)
	}
	return sameExcept(b, a, skip, func(_ string, bv, av any) bool { return equality.Semantic.DeepEqual(bv, av) })
}

// decisivePhase is a node's phase as informationalOnly compares it: Running counts as Pending.
func decisivePhase(node map[string]any) (any, bool) {
	p, ok := node["phase"]
	if p == "Running" {
		return "Pending", ok
	}
	return p, ok
}

// sameExcept reports whether b and a hold the same keys apart from those skip (nil: none) ignores, with
// values that eq deems equal. Nil and empty maps are the same, as for equality.Semantic.
func sameExcept(b, a map[string]any, skip func(string) bool, eq func(key string, b, a any) bool) bool {
	n := 0
	for k, bv := range b {
		if skip != nil && skip(k) {
			continue
		}
		av, ok := a[k]
		if !ok || !eq(k, bv, av) {
			return false
		}
		n++
	}
	for k := range a {
		if skip == nil || !skip(k) {
			n--
		}
	}
	return n == 0
}

// onlyPruned reports whether after differs from before only by dropping some write-ahead records. Dropping
// the records of actions whose outcome is written decides nothing (they only guard a replay, which a
// written outcome no longer needs), so it rides with the workflow's next write instead of costing one. A new
// or changed record is never held back (I4).
func onlyPruned(before, after *unstructured.Unstructured) bool {
	return prunedOnly(before.Object, after.Object) &&
		equality.Semantic.DeepEqual(withoutRecords(before.Object), withoutRecords(after.Object))
}

// withoutRecords is a copy of u without its write-ahead records (status.appliedActions and their annotation
// mirror).
func withoutRecords(u map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(u)
	unstructured.RemoveNestedField(out, "status", "appliedActions")
	unstructured.RemoveNestedField(out, "metadata", "annotations", extstatus.AnnotationAppliedActions)
	if annotations, ok, _ := unstructured.NestedMap(out, "metadata", "annotations"); ok && len(annotations) == 0 {
		unstructured.RemoveNestedField(out, "metadata", "annotations")
	}
	return out
}

// prunedOnly reports whether after's write-ahead records are before's with some removed and none added.
func prunedOnly(before, after map[string]any) bool {
	b, _, _ := unstructured.NestedSlice(before, "status", "appliedActions")
	a, _, _ := unstructured.NestedSlice(after, "status", "appliedActions")
	if len(a) >= len(b) {
		return false
	}
	for _, r := range a {
		if !slices.ContainsFunc(b, func(x any) bool { return equality.Semantic.DeepEqual(x, r) }) {
			return false
		}
	}
	return true
}

// detailWindows is how many coalescing windows a pass whose informational changes move no node's phase
// (a host, an exit code, outputs before completion) may wait. Such details come between a node shown
// Running and its end, whose write, usually sooner, carries them; argo shows them no sooner (its default
// requeue is 10 s). Without it a slow API server made more writes: the later a pod ended after its main
// container, the likelier a second progress write of the node.
const detailWindows = 5

// coalescingWindow is how long the informational-only change from before to after may wait: one window
// for a node going from Pending to Running, detailWindows for the rest.
func (c *Controller) coalescingWindow(before, after *unstructured.Unstructured) time.Duration {
	if nodePhaseChanged(before.Object, after.Object) {
		return c.opts.StatusCoalesceWindow
	}
	return detailWindows * c.opts.StatusCoalesceWindow
}

// nodePhaseChanged reports whether a node of after has another phase in before, or is new.
func nodePhaseChanged(before, after map[string]any) bool {
	// In place, as informationalOnly: this runs on every pass that changed something.
	bv, _, _ := unstructured.NestedFieldNoCopy(before, "status", "nodes")
	av, _, _ := unstructured.NestedFieldNoCopy(after, "status", "nodes")
	bn, _ := bv.(map[string]any)
	an, _ := av.(map[string]any)
	for id, a := range an {
		b, ok := bn[id].(map[string]any)
		node, _ := a.(map[string]any)
		if !ok || node == nil || b["phase"] != node["phase"] {
			return true
		}
	}
	return false
}

// coalesce decides whether an informational-only pass of key that may wait window is written now. It
// returns how long to wait before writing, 0 meaning write now. The window starts at the first event of a
// change that may wait (noteInformational), or else at the first deferred pass, whatever its length.
func (c *Controller) coalesce(key string, now time.Time, window time.Duration) time.Duration {
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

// noteInformational starts key's coalescing window at now, unless one is open: an event that may wait was
// seen. Its delayed pass then comes when the window is over and writes, instead of deferring once more and
// running again a window later. The time is cut to the second, as a pass's Now, which coalesce compares it
// with.
func (c *Controller) noteInformational(key string, now time.Time) {
	c.deferredMu.Lock()
	defer c.deferredMu.Unlock()
	if _, open := c.deferred[key]; !open {
		c.deferred[key] = now.UTC().Truncate(time.Second)
	}
}

// closeWindow ends key's coalescing window: everything that waited is in the write just made, or the
// workflow is gone or completed.
func (c *Controller) closeWindow(key string) {
	c.deferredMu.Lock()
	delete(c.deferred, key)
	c.deferredMu.Unlock()
}

// closeWindowBefore ends key's coalescing window if it opened before start: a pass that began at start
// found nothing to write, so nothing seen before it waits. A window opened since stays open for its event.
func (c *Controller) closeWindowBefore(key string, start time.Time) {
	c.deferredMu.Lock()
	if since, open := c.deferred[key]; open && since.Before(start) {
		delete(c.deferred, key)
	}
	c.deferredMu.Unlock()
}

func (c *Controller) forgetDeferred(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.closeWindow(key)
	}
}

// informationalDelay is how long the event from old to obj (old nil: an add) may wait before its workflow
// is reconciled: 0 for pod and result changes that may decide something (a pod ending or going away, a
// finalizer or label change, a result becoming complete while its pod has ended or is gone), the coalescing
// window for a pod starting to run, whose node goes Running, and detailWindows for the rest, which only add
// details the node's Running or completion write carries (a pod created or bound, container states, a result
// placeholder, outputs before completion, a result completing while its pod still runs). A pass queued
// for a detail would defer until its node's next write anyway.
func (c *Controller) informationalDelay(old, obj any) time.Duration {
	window := c.opts.StatusCoalesceWindow
	if window <= 0 {
		return 0
	}
	switch n := obj.(type) {
	case *corev1.Pod:
		o, _ := old.(*corev1.Pod)
		switch {
		case decisivePodChange(o, n):
			return 0
		case n.Status.Phase == corev1.PodRunning && (o == nil || o.Status.Phase != corev1.PodRunning),
			engine.PodReady(n) != (o != nil && engine.PodReady(o)):
			// A node goes Running, or a daemon's pod turns ready, which lets its successors start.
			return window
		}
		return detailWindows * window
	case *wfv1.WorkflowTaskResult:
		o, _ := old.(*wfv1.WorkflowTaskResult)
		becameComplete := n.Labels[common.LabelKeyReportOutputsCompleted] == "true" &&
			(o == nil || o.Labels[common.LabelKeyReportOutputsCompleted] != "true")
		if becameComplete && !c.resultPodRunning(n) {
			return 0
		}
		return detailWindows * window
	}
	return 0
}

// resultPodRunning reports whether the cache holds a running pod for result's node. The complete result
// then decides nothing yet: the pod's end, always reconciled at once, comes later and finds the result
// already cached. The executor completes its result before the pod ends, so this saves the usual case one
// pass per pod. Only the pod the controller created for the node counts (podidentity): a pod another
// identity made that merely claims the node does not hold the pass back.
func (c *Controller) resultPodRunning(r *wfv1.WorkflowTaskResult) bool {
	if c.inf == nil {
		return false
	}
	key := workflowKeyOf(r)
	if key == "" {
		return false
	}
	objs, _ := c.inf.pods.GetIndexer().ByIndex(IndexWorkflowKey, key)
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if pod.Annotations[common.AnnotationKeyNodeID] != r.Name || decisivePodChange(nil, pod) {
			continue
		}
		// The pod's own ownerReference is trusted only together with its name: the name argo derives
		// for the node is unique in the namespace, and the controller's pod holds it.
		if owner, ok := podidentity.ClaimedOwner(pod); ok && podidentity.Check(owner, nil, pod) == podidentity.Match {
			return true
		}
	}
	return false
}

func decisivePodChange(old, pod *corev1.Pod) bool {
	terminal := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	if old == nil {
		return terminal(pod) || pod.DeletionTimestamp != nil
	}
	return terminal(pod) != terminal(old) ||
		(pod.DeletionTimestamp == nil) != (old.DeletionTimestamp == nil) ||
		!slices.Equal(pod.Finalizers, old.Finalizers) ||
		!maps.Equal(pod.Labels, old.Labels) || !maps.Equal(pod.Annotations, old.Annotations)
}

// ownEcho reports whether a workflow update is the informer delivering our own last write, which needs no
// immediate pass: the pass that wrote it saw every input it records, and inputs since enqueue themselves. A
// pass that skipped a stale copy meanwhile waits for this echo, so then it is reconciled at once.
func (c *Controller) ownEcho(obj metav1.Object) bool {
	if c.opts.StatusCoalesceWindow <= 0 {
		return false
	}
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	last, ok := c.written[obj.GetUID()]
	if !ok || last.resourceVersion != obj.GetResourceVersion() {
		return false
	}
	return !c.takeEchoWaiter(obj.GetNamespace() + "/" + obj.GetName())
}

// takeEchoWaiter reports whether a pass of key skipped a stale copy and waits for our write's echo, which
// is then reconciled at once; the wait is used up. The caller holds writtenMu.
func (c *Controller) takeEchoWaiter(key string) bool {
	if _, waiting := c.staleWaiters[key]; !waiting {
		return false
	}
	delete(c.staleWaiters, key)
	return true
}

// holdUpdates starts holding uid's update events: a write of it is on the wire (storeWorkflow). Only with
// coalescing on, as ownEcho.
func (c *Controller) holdUpdates(uid types.UID) {
	if c.opts.StatusCoalesceWindow <= 0 {
		return
	}
	c.writtenMu.Lock()
	if c.inFlight == nil {
		c.inFlight = map[types.UID][]string{}
	}
	c.inFlight[uid] = []string{}
	c.writtenMu.Unlock()
}

// heldForWrite reports whether obj's update event is held because a write of its workflow is on the wire.
func (c *Controller) heldForWrite(obj metav1.Object) bool {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	held, ok := c.inFlight[obj.GetUID()]
	if ok {
		c.inFlight[obj.GetUID()] = append(held, obj.GetResourceVersion())
	}
	return ok
}

// releaseUpdates ends uid's write (stored: the resourceVersion it stored, "" if it failed) and queues what
// was held as the handler would have with the write recorded: its own echo for a late look (at once if a
// pass waits for it), any other update as a change.
func (c *Controller) releaseUpdates(key string, uid types.UID, stored string) {
	c.writtenMu.Lock()
	held := c.inFlight[uid]
	delete(c.inFlight, uid)
	own, other := false, false
	for _, rv := range held {
		if stored != "" && rv == stored {
			own = true
		} else {
			other = true
		}
	}
	if own && c.takeEchoWaiter(key) {
		other = true // as ownEcho: the pass that waits for this echo runs now
	}
	c.writtenMu.Unlock()
	switch {
	case other:
		c.changed(key)
	case own:
		c.changedAfter(key, c.opts.StatusCoalesceWindow)
	}
}

// awaitEcho notes that key skipped a stale copy and must be reconciled when our write reaches the cache.
func (c *Controller) awaitEcho(key string) {
	c.writtenMu.Lock()
	c.staleWaiters[key] = struct{}{}
	c.writtenMu.Unlock()
}
