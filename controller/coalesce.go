package controller

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podidentity"
)

// informationalOnly reports whether after (with afterExt) differs from before (with beforeExt) only in
// informational node fields or in a node going from Pending to Running. Such a pass may wait for the
// coalescing window. It compares argo's types in place: every pass that changed something pays it. Equal
// is equal as apimachinery's semantic comparison sees it; what it finds different but encodes the same
// (an instant within the same second) is written at once, never held back.
func informationalOnly(before, after *wfv1.Workflow, beforeExt, afterExt *extstatus.Extensions) bool {
	if !same(beforeExt, afterExt) || !same(&before.ObjectMeta, &after.ObjectMeta) || !same(&before.Spec, &after.Spec) {
		return false
	}
	b, a := before.Status, after.Status // shallow copies, to compare all but the nodes and what follows them
	b.Nodes, a.Nodes = nil, nil
	clientstatus.ClearDerived(&b)
	clientstatus.ClearDerived(&a)
	if !same(&b, &a) || len(before.Status.Nodes) != len(after.Status.Nodes) {
		return false
	}
	scratch := new([2]wfv1.NodeStatus) // one allocation for all nodes: each compared copy escapes to reflect
	for id, bn := range before.Status.Nodes {
		an, ok := after.Status.Nodes[id]
		if !ok || !sameNode(bn, an, scratch) {
			return false
		}
	}
	return true
}

// same is apimachinery's semantic equality, after the cheaper exact one: most of what is compared is an
// untouched copy.
func same[T any](b, a *T) bool {
	return reflect.DeepEqual(b, a) || equality.Semantic.DeepEqual(b, a)
}

// sameNode compares two nodes without their informational fields, a Running phase counting as Pending,
// in scratch.
func sameNode(b, a wfv1.NodeStatus, scratch *[2]wfv1.NodeStatus) bool {
	if decisivePhase(b.Phase) != decisivePhase(a.Phase) {
		return false
	}
	// Equal phases: both nodes are completed or neither is.
	completed := b.Phase.Completed()
	scratch[0], scratch[1] = withoutInformational(b, completed), withoutInformational(a, completed)
	return same(&scratch[0], &scratch[1])
}

// withoutInformational is n without its phase and its informational fields: those change as a pod runs but
// decide nothing, since no successor, release or outcome depends on them before the node's phase changes,
// which is always written at once. taskResultSynced is informational only while the node is not completed.
func withoutInformational(n wfv1.NodeStatus, completed bool) wfv1.NodeStatus {
	n.Phase = "" // compared on its own
	n.HostNodeName, n.Outputs, n.ResourcesDuration, n.Progress, n.PodIP = "", nil, nil, "", ""
	if !completed {
		// A completed node whose gate opens becomes fulfilled: successors, its pod's release and podGC
		// follow from it, so it is written at once (I5).
		n.TaskResultSynced = nil
	}
	return n
}

// decisivePhase is a node's phase as informationalOnly compares it: Running counts as Pending.
func decisivePhase(p wfv1.NodePhase) wfv1.NodePhase {
	if p == wfv1.NodeRunning {
		return wfv1.NodePending
	}
	return p
}

// onlyPruned reports whether the pass (wf, ext) differs from before only by dropping some write-ahead
// records. Dropping the records of actions whose outcome is written decides nothing (they only guard a
// replay, which a written outcome no longer needs), so it rides with the workflow's next write instead of
// costing one. A new or changed record is never held back (I4).
func onlyPruned(before *decoded, wf *wfv1.Workflow, ext *extstatus.Extensions) bool {
	if !prunedOnly(before.ext.AppliedActions, ext.AppliedActions) {
		return false
	}
	b, errB := withoutRecords(before.wf, before.ext)
	a, errA := withoutRecords(wf, *ext)
	return errB == nil && errA == nil && bytes.Equal(b, a)
}

// withoutRecords is the encoding of wf without its write-ahead records (status.appliedActions and their
// annotation mirror, which Encode writes from them).
func withoutRecords(wf *wfv1.Workflow, ext extstatus.Extensions) ([]byte, error) {
	ext.AppliedActions = nil
	return extstatus.Encode(wf, ext)
}

// prunedOnly reports whether after's write-ahead records are before's with some removed and none added.
func prunedOnly(before, after []extstatus.AppliedAction) bool {
	if len(after) >= len(before) {
		return false
	}
	for _, r := range after {
		if !slices.Contains(before, r) {
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
func (c *Controller) coalescingWindow(before, after *wfv1.Workflow) time.Duration {
	if nodePhaseChanged(before.Status.Nodes, after.Status.Nodes) {
		return c.opts.StatusCoalesceWindow
	}
	return detailWindows * c.opts.StatusCoalesceWindow
}

// nodePhaseChanged reports whether a node of after has another phase in before, or is new.
func nodePhaseChanged(before, after wfv1.Nodes) bool {
	for id, a := range after {
		if b, ok := before[id]; !ok || b.Phase != a.Phase {
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
