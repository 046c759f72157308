package engine

import (
	"context"
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/taskresult"
)

// memoCache is the cache a memoized template names, in the workflow's namespace.
func (e *Engine) memoCache(p *Pass, m *wfv1.Memoize) (memoize.Cache, error) {
	if e.Caches == nil || m.Cache == nil || m.Cache.ConfigMap == nil || m.Cache.ConfigMap.Name == "" {
		return memoize.Cache{}, memoize.ErrNoCache
	}
	return memoize.Cache{Client: e.Caches, Namespace: p.WF.Namespace, Name: m.Cache.ConfigMap.Name, Provenance: e.MemoProvenance}, nil
}

// ReasonMemoEntryIgnored is the Warning Event on a workflow one of whose memoized nodes found an entry the
// controller did not save (--memoize-trust=sealed): the entry was ignored and the node ran.
const ReasonMemoEntryIgnored = "WorkflowMemoizationEntryIgnored"

// reportIgnoredEntry records, once per workflow and entry, that a cache entry was not taken.
func (e *Engine) reportIgnoredEntry(p *Pass, cache memoize.Cache, key, nodeName, why string) {
	if !e.memoIgnored.First(fmt.Sprintf("%s/%s/%s/%s", p.WF.UID, cache.Namespace, cache.Name, key)) {
		return
	}
	e.MemoMetrics.EntryIgnored(why)
	p.Events = append(p.Events, Event{Warning: true, Reason: ReasonMemoEntryIgnored, Message: fmt.Sprintf(
		"The memoization cache entry %q in ConfigMap %s/%s was not saved by the controller (%s): ignored, node %s runs (--memoize-trust=sealed)",
		key, cache.Namespace, cache.Name, why, nodeName)})
}

// memoLookup looks the call's memoized template up before its node is created. A hit creates the node
// Succeeded with the cached outputs and no pod (done=true); a miss returns the memoization status the node
// created next must carry. A cache that cannot be read errors the node with argo's message, the error
// returned for its caller as argo reports it.
func (e *Engine) memoLookup(ctx context.Context, c *nodeCall) (n *wfv1.NodeStatus, status *wfv1.MemoizationStatus, done bool, err error) {
	p, m := c.p, c.resolved.Memoize
	cache, err := e.memoCache(p, m)
	if err == nil {
		var found memoize.Found
		found, err = cache.Lookup(ctx, m.Key, m.MaxAge, p.Now)
		status = &wfv1.MemoizationStatus{Hit: found.Hit, Key: m.Key, CacheName: cache.Name}
		if err == nil && found.Hit {
			return cacheHitNode(c, found.Outputs, status), nil, true, nil
		}
		if err == nil && found.Ignored != "" {
			e.reportIgnoredEntry(p, cache, m.Key, c.name, found.Ignored)
		}
	}
	if err != nil && cacheRetryable(err) {
		return nil, nil, true, &apiError{fmt.Errorf("reading the memoization cache of node %s: %w", c.name, err)}
	}
	if err != nil {
		return c.errorNode(e, err.Error()), nil, true, err
	}
	return nil, status, false, nil
}

// cacheHitNode records a node served from the cache: Succeeded with the cached outputs; no pod will ever
// report for it, so its result gate is open.
func cacheHitNode(c *nodeCall, outputs *wfv1.Outputs, status *wfv1.MemoizationStatus) *wfv1.NodeStatus {
	p, tmpl := c.p, c.resolved
	n := p.newNode(nodeAt{c.name, c.display, tmpl.Name, c.boundaryID}, nodeTypeOf(tmpl), wfv1.NodeSucceeded, "")
	n.Inputs = inputsOf(tmpl)
	n.Outputs = outputs.DeepCopy()
	n.MemoizationStatus = status
	if n.Type == wfv1.NodeTypePod {
		taskresult.OpenGate(n)
	}
	p.setNode(n)
	p.Events = append(p.Events, nodeEvent(n))
	return n
}

// stampMemoization gives the node created for a memoized template on a miss its memoization status, so it
// is saved once it succeeds.
func stampMemoization(p *Pass, nodeName string, status *wfv1.MemoizationStatus) {
	if created := p.node(nodeName); created != nil && created.MemoizationStatus == nil {
		created.MemoizationStatus = status
		p.setNode(created)
	}
}

// saveMemoized stores the outputs of memoized nodes that succeeded (result in) and are not saved yet, as
// argo saves them when the node succeeds; a cache that refuses the entry errors the node with its message.
func (e *Engine) saveMemoized(ctx context.Context, p *Pass) error {
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		ms := n.MemoizationStatus
		if ms == nil || ms.Hit || n.Phase != wfv1.NodeSucceeded || !settled(n) {
			continue
		}
		key := string(p.WF.UID) + "/" + id
		if _, saved := e.memoSaved.Load(key); saved {
			continue
		}
		cache := memoize.Cache{Client: e.Caches, Namespace: p.WF.Namespace, Name: ms.CacheName, Provenance: e.MemoProvenance}
		if e.Caches == nil {
			p.markPhase(n, wfv1.NodeError, memoize.ErrNoCache.Error())
			continue
		}
		err := cache.Save(ctx, ms.Key, id, n.Outputs, p.Now)
		if err != nil && cacheRetryable(err) {
			return &apiError{fmt.Errorf("saving the outputs of node %s to the memoization cache: %w", n.Name, err)}
		}
		if err != nil {
			p.markPhase(n, wfv1.NodeError, err.Error())
			continue
		}
		e.memoSaved.Store(key, true)
	}
	return nil
}

// cacheRetryable: a cache read or write worth another pass (a transient API error, or a conflict with
// another writer of the same ConfigMap).
func cacheRetryable(err error) bool {
	return apierror.Transient(err) || apierrors.IsConflict(err)
}

// forgetMemoSaved drops a completed workflow's record of saved entries.
func (e *Engine) forgetMemoSaved(p *Pass) {
	prefix := string(p.WF.UID) + "/"
	e.memoSaved.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			e.memoSaved.Delete(k)
		}
		return true
	})
}
