package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/resourceversion"
)

var updateOptions = metav1.UpdateOptions{FieldManager: "wfguard-controller"}

// reapplyAttempts bounds re-reads after conflicts within one pass; the queue retries beyond that.
const reapplyAttempts = 5

// persistOutcome says what became of a pass's status.
type persistOutcome int

const (
	// unchanged: the pass changed nothing; the cache copy it read is what is stored.
	unchanged persistOutcome = iota
	// written: the pass's status is stored.
	written
	// dropped: the pass was not stored (it would regress completed work, or the workflow is gone).
	dropped
	// deferred: the pass changed only informational fields and waits for the coalescing window; the
	// stored copy decides the same as the pass would.
	deferred
)

// persist writes the pass with a single Update. On conflict it re-reads the workflow and re-applies the
// pass's changes as a merge patch, refusing to regress a completed workflow or node.
func (c *Controller) persist(ctx context.Context, p *pass) (persistOutcome, error) {
	if p.loaded.unchangedBy(p.WF, p.Ext) {
		c.closeWindowBefore(p.key, p.Now)
		return unchanged, nil // most passes: no encoding needed to know it
	}
	// What argo derives from the nodes before its write, only on a pass that changed something: it follows
	// the nodes, so it never makes a write of its own.
	clientstatus.Update(p.WF, p.Pods, p.start.phase != wfv1.WorkflowUnknown)
	p.WF.ResourceVersion = p.loaded.resourceVersion
	next, err := extstatus.Encode(p.WF, *p.Ext)
	if err != nil {
		return dropped, err
	}
	if bytes.Equal(p.loaded.encoded, next) || onlyPruned(p.loaded, p.WF, p.Ext) {
		c.closeWindowBefore(p.key, p.Now)
		return unchanged, nil // pruned records alone go with the next write
	}
	if len(p.Events) == 0 && informationalOnly(p.loaded.wf, p.WF, &p.loaded.ext, p.Ext) {
		if wait := c.coalesce(p.key, p.Now, c.coalescingWindow(p.loaded.wf, p.WF)); wait > 0 {
			p.RequeueBy(p.Now.Add(wait))
			c.metrics.persists.WithLabelValues(persistDeferred).Inc()
			return deferred, nil
		}
	}
	c.closeWindow(p.key)
	if h := c.opts.Hooks.BeforePersist; h != nil {
		h(p.key)
	}
	body, err := extstatus.FitEncoded(p.WF, *p.Ext, next, c.opts.MaxWorkflowSize)
	if err != nil {
		return c.failUnstorable(ctx, p, err)
	}
	err = c.storeWorkflow(ctx, p.WF, body)
	if err == nil {
		c.metrics.persists.WithLabelValues(persistUpdated).Inc()
		return written, nil
	}
	if _, permanent := classifyWriteError(err); permanent {
		return c.failUnstorable(ctx, p, err)
	}
	if !apierrors.IsConflict(err) {
		return dropped, fmt.Errorf("updating workflow %s: %w", p.key, err)
	}
	c.metrics.persists.WithLabelValues(persistConflict).Inc()
	return c.reapply(ctx, p, next)
}

// reapply re-reads the workflow and applies the diff between what the pass loaded and what it computed
// (next, its encoding).
func (c *Controller) reapply(ctx context.Context, p *pass, next []byte) (persistOutcome, error) {
	patch, err := jsonpatch.CreateMergePatch(p.loaded.encoded, next)
	if err != nil {
		return dropped, fmt.Errorf("diffing the pass of %s for re-apply: %w", p.key, err)
	}
	client := c.dynamic.Resource(workflowsResource).Namespace(p.WF.Namespace)
	for attempt := 1; attempt <= reapplyAttempts; attempt++ {
		latest, err := client.Get(ctx, p.WF.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return dropped, nil
		}
		if err != nil {
			return dropped, fmt.Errorf("re-reading workflow %s after a conflict: %w", p.key, err)
		}
		if err := c.inflater.InflateUnstructured(latest); err != nil {
			return dropped, err
		}
		if latest.GetUID() != p.WF.UID {
			p.log.Info("workflow was recreated during the pass; dropping the pass")
			return dropped, nil
		}
		if reason := regression(latest, p.WF); reason != "" {
			c.metrics.persists.WithLabelValues(persistRefused).Inc()
			p.log.Info("not re-applying a pass that would regress the workflow", "reason", reason)
			return dropped, nil
		}
		latestJSON, err := latest.MarshalJSON()
		if err != nil {
			return dropped, err
		}
		merged, err := jsonpatch.MergePatch(latestJSON, patch)
		if err != nil {
			return dropped, fmt.Errorf("re-applying the pass of %s: %w", p.key, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(merged); err != nil {
			return dropped, fmt.Errorf("re-applying the pass of %s: %w", p.key, err)
		}
		obj.SetResourceVersion(latest.GetResourceVersion())
		fitted, body, err := extstatus.Fit(obj, c.opts.MaxWorkflowSize)
		if err != nil {
			return c.failUnstorable(ctx, p, err)
		}
		err = c.storeWorkflow(ctx, fitted, body)
		if err == nil {
			c.metrics.persists.WithLabelValues(persistReapplied).Inc()
			return written, nil
		}
		if _, permanent := classifyWriteError(err); permanent {
			return c.failUnstorable(ctx, p, err)
		}
		if !apierrors.IsConflict(err) {
			return dropped, fmt.Errorf("updating workflow %s after re-apply: %w", p.key, err)
		}
	}
	return dropped, fmt.Errorf("updating workflow %s: still conflicting after %d re-applies", p.key, reapplyAttempts)
}

// regression explains why applying ours onto latest would undo completed work, or returns "".
func regression(latest *unstructured.Unstructured, ours *wfv1.Workflow) string {
	var status struct {
		Status wfv1.WorkflowStatus `json:"status"`
	}
	data, err := latest.MarshalJSON()
	if err != nil || json.Unmarshal(data, &status) != nil {
		return "the latest workflow cannot be decoded"
	}
	if status.Status.Phase.Completed() {
		return fmt.Sprintf("the workflow is already %s", status.Status.Phase)
	}
	for id, theirs := range status.Status.Nodes {
		mine, ok := ours.Status.Nodes[id]
		if ok && (theirs.Fulfilled() || theirs.Phase.Completed()) && mine.Phase != theirs.Phase {
			return fmt.Sprintf("node %s is already %s", theirs.Name, theirs.Phase)
		}
	}
	return ""
}

// lastWrite is our last write of a workflow: its resourceVersion, and the object the API server stored,
// undecoded, until the informer delivers it (or something newer).
type lastWrite struct {
	resourceVersion string
	// stored is decoded only if a pass starts from it while the cache lags behind: a few passes in a
	// thousand, so decoding every answer (4% of the controller's CPU) was mostly wasted.
	stored []byte
}

// storeWorkflow writes body, the encoding of the workflow wf names, and records what was stored (recordStored). An update event
// of the workflow that arrives while the write is on the wire is held until the answer: the echo of this
// write is then ours (looked at one window later), anything else is queued as a change. Without the hold,
// an echo that beat the answer looked like someone else's write and cost a pass: 207 for 500 pods in a
// throughput round.
func (c *Controller) storeWorkflow(ctx context.Context, wf metav1.Object, body []byte) error {
	key, uid := wf.GetNamespace()+"/"+wf.GetName(), wf.GetUID()
	var stored storedWrite
	c.holdUpdates(uid)
	defer func() { c.releaseUpdates(key, uid, stored.resourceVersion) }() // also if the write panics
	stored, err := c.putWorkflow(ctx, wf, body)
	if err == nil {
		c.recordStored(stored)
	}
	return err
}

// storedWrite is what one update of a workflow left in the API server.
type storedWrite struct {
	key             string // namespace/name
	uid             types.UID
	resourceVersion string
	object          []byte // the API server's answer: the stored object, JSON
}

// putWorkflow stores body, the encoding of the workflow wf names, with one Update. Of the answer it decodes only the identity;
// the object is kept as it came (lastWrite).
func (c *Controller) putWorkflow(ctx context.Context, u metav1.Object, body []byte) (storedWrite, error) {
	// JSON both ways: the answer is kept as it came and read as JSON (lastWrite, freshest).
	result := c.workflowsREST.Put().
		AbsPath("/apis", workflowsResource.Group, workflowsResource.Version, "namespaces", u.GetNamespace(), workflowsResource.Resource, u.GetName()).
		SetHeader("Content-Type", runtime.ContentTypeJSON).SetHeader("Accept", runtime.ContentTypeJSON).
		VersionedParams(&updateOptions, metav1.ParameterCodec).Body(body).Do(ctx)
	// Error decodes the API server's Status, message and details included; Raw's error has only the reason.
	if err := result.Error(); err != nil {
		return storedWrite{}, err
	}
	answer, err := result.Raw()
	if err != nil {
		return storedWrite{}, err
	}
	var head struct {
		Metadata struct {
			UID             types.UID `json:"uid"`
			ResourceVersion string    `json:"resourceVersion"`
		} `json:"metadata"`
	}
	// The write may have been stored: the next one then conflicts and re-applies (reapply).
	if err := json.Unmarshal(answer, &head); err != nil {
		return storedWrite{}, fmt.Errorf("reading the API server's answer to the update of workflow %s/%s (%d bytes): %w",
			u.GetNamespace(), u.GetName(), len(answer), err)
	}
	if head.Metadata.ResourceVersion == "" || head.Metadata.UID == "" {
		return storedWrite{}, fmt.Errorf("reading the API server's answer to the update of workflow %s/%s (%d bytes): no uid or resourceVersion",
			u.GetNamespace(), u.GetName(), len(answer))
	}
	return storedWrite{key: u.GetNamespace() + "/" + u.GetName(), uid: head.Metadata.UID, resourceVersion: head.Metadata.ResourceVersion,
		object: answer}, nil
}

// recordWrite remembers an update's answer, u, for the workflow's UID (recordStored).
func (c *Controller) recordWrite(u *unstructured.Unstructured) {
	object, err := u.MarshalJSON()
	if err != nil { // u came decoded from the API server: it encodes
		c.log.Error("keeping our last write of a workflow", "workflow", u.GetNamespace()+"/"+u.GetName(), "err", err)
	}
	c.recordStored(storedWrite{key: u.GetNamespace() + "/" + u.GetName(), uid: u.GetUID(), resourceVersion: u.GetResourceVersion(), object: object})
}

// recordStored remembers what we wrote for the workflow's UID: the object the API server returned, kept
// only while the cache has not shown it yet. Its echo can reach the cache before this records it; the store
// is read under the lock the echo's handler takes, so either this sees the echo or the handler drops it.
func (c *Controller) recordStored(w storedWrite) {
	stored := w.object
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	if c.cacheShows(w.key, w.uid, w.resourceVersion) {
		stored = nil
	}
	c.written[w.uid] = lastWrite{resourceVersion: w.resourceVersion, stored: stored}
}

// cacheShows reports whether the workflow cache holds key's uid at resourceVersion or a later one.
func (c *Controller) cacheShows(key string, uid types.UID, resourceVersion string) bool {
	if c.inf == nil {
		return false
	}
	obj, ok, _ := c.inf.workflows.GetIndexer().GetByKey(key)
	if !ok {
		return false
	}
	cached := obj.(*unstructured.Unstructured)
	return cached.GetUID() == uid && resourceversion.Compare(cached.GetResourceVersion(), resourceVersion) >= 0
}

// isStale reports whether the cache copy is older than our last write of the same UID.
func (c *Controller) isStale(u *unstructured.Unstructured) bool {
	c.writtenMu.Lock()
	last, ok := c.written[u.GetUID()]
	c.writtenMu.Unlock()
	if !ok {
		return false
	}
	return resourceversion.Compare(u.GetResourceVersion(), last.resourceVersion) < 0
}

// freshest returns the copy a pass starts from: the cache's, or, while the cache is older than our last
// write, the object that write stored. Waiting for the informer's echo instead held every chain's next
// step for one watch delivery; starting from the stored object is as safe as from any cache copy, since
// our next write carries its resourceVersion and conflicts if anyone wrote since.
func (c *Controller) freshest(cached *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	stored, useCache := c.storedIfNewer(cached)
	if useCache {
		return cached, true
	}
	if stored == nil {
		return nil, false
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(stored); err != nil {
		// The API server's own answer: never expected. The pass waits for the cache's copy.
		c.log.Error("decoding the object our last write stored; waiting for the cache", "workflow", cached.GetNamespace()+"/"+cached.GetName(), "err", err)
		return nil, false
	}
	u.SetManagedFields(nil) // as the informer's transform does
	return u, true
}

// storedIfNewer returns the object our last write of cached's UID stored, undecoded, when the cache is
// older than that write; useCache when it is not.
func (c *Controller) storedIfNewer(cached *unstructured.Unstructured) (stored []byte, useCache bool) {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	last, ok := c.written[cached.GetUID()]
	if !ok {
		return nil, true
	}
	if resourceversion.Compare(cached.GetResourceVersion(), last.resourceVersion) >= 0 {
		if last.stored != nil { // the cache caught up without an update event (a relist's replace)
			last.stored = nil
			c.written[cached.GetUID()] = last
		}
		return nil, true
	}
	return last.stored, false
}

// cacheCaughtUp drops the stored copy of our last write once the informer delivers it or something newer.
func (c *Controller) cacheCaughtUp(obj metav1.Object) {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	last, ok := c.written[obj.GetUID()]
	if ok && last.stored != nil && resourceversion.Compare(obj.GetResourceVersion(), last.resourceVersion) >= 0 {
		last.stored = nil
		c.written[obj.GetUID()] = last
	}
}

// wroteSinceStart reports whether this process has written the workflow.
func (c *Controller) wroteSinceStart(uid types.UID) bool {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	_, ok := c.written[uid]
	return ok
}

// forgetWrites drops the stale-cache record of a deleted workflow, so the map stays bounded.
func (c *Controller) forgetWrites(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, err := meta.Accessor(obj); err == nil {
		c.writtenMu.Lock()
		delete(c.written, o.GetUID())
		c.writtenMu.Unlock()
	}
}
