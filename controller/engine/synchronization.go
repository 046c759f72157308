package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/synchronization"
)

// lockRecheck is how often a holder waiting for a lock asks again even if no release woke it: the wake-up
// is an in-memory notification, this bounds the cost of one lost.
const lockRecheck = 30 * time.Second

var (
	defaultLocksOnce sync.Once
	defaultLocks     *synchronization.Manager
)

// locks is the engine's lock table; an engine given none (tests) shares one process-wide table.
func (e *Engine) locks() *synchronization.Manager {
	if e.Locks != nil {
		return e.Locks
	}
	defaultLocksOnce.Do(func() { defaultLocks = synchronization.NewManager(nil) })
	return defaultLocks
}

// lockRequest builds holder's request for the locks of spec s, reading each ConfigMap semaphore's limit.
// A lock wfguard cannot take (database-backed: wfguard has no synchronization database, as argo without
// one) is an error with argo's message.
func (e *Engine) lockRequest(ctx context.Context, wf *wfv1.Workflow, holder string, s *wfv1.Synchronization) (synchronization.Request, error) {
	locks, err := synchronization.Locks(s, wf.Namespace)
	if err != nil {
		return synchronization.Request{}, fmt.Errorf("requested configuration is invalid: %w", err)
	}
	req := synchronization.Request{Holder: holder, Created: wf.CreationTimestamp.Time, Locks: locks, Limits: map[string]int{}}
	if wf.Spec.Priority != nil {
		req.Priority = *wf.Spec.Priority
	}
	for _, l := range locks {
		switch l.Kind {
		case synchronization.KindDatabase:
			kind := "semaphore"
			if l.Type == wfv1.SynchronizationTypeMutex {
				kind = "mutex"
			}
			return req, fmt.Errorf("database session is not available for %s %s", kind, l.Key)
		case synchronization.KindConfigMap:
			if req.Limits[l.Key], err = e.semaphoreLimit(ctx, l); err != nil {
				return req, err
			}
		}
	}
	return req, nil
}

// semaphoreLimit reads a semaphore's limit from its ConfigMap key; 0 when it cannot be had (no ConfigMap,
// no key, not a number), a transient API error as an apiError so the pass is retried.
func (e *Engine) semaphoreLimit(ctx context.Context, l synchronization.Lock) (int, error) {
	if e.ConfigMaps == nil {
		return 0, nil
	}
	cm, err := e.ConfigMaps.ConfigMap(ctx, l.Namespace, l.Name, true) // a limit is read as it is now
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil && apierror.Transient(err):
		return 0, &apiError{fmt.Errorf("reading the limit of semaphore %s: %w", l.Key, err)}
	case err != nil:
		return 0, nil
	}
	n, err := strconv.Atoi(cm.Data[l.ConfigKey])
	if err != nil {
		return 0, nil
	}
	return n, nil
}

// tryLocks asks for holder's locks of spec s; errors carry argo's messages.
func (e *Engine) tryLocks(ctx context.Context, p *Pass, holder string, s *wfv1.Synchronization) (acquired bool, msg, waitingFor string, err error) {
	req, err := e.lockRequest(ctx, p.WF, holder, s)
	if err != nil {
		return false, "", "", err
	}
	acquired, msg, waitingFor, err = e.locks().TryAcquire(&p.WF.Status.Synchronization, req)
	if errors.Is(err, synchronization.ErrNoLimit) {
		return false, "", waitingFor, fmt.Errorf("failed to initialize semaphore %s with limit", waitingFor)
	}
	if !acquired && err == nil {
		p.requeueBy(p.Now.Add(lockRecheck))
	}
	return acquired, msg, waitingFor, err
}

// acquireWorkflowLocks takes the workflow's own locks (spec.synchronization) before it starts: not
// acquired, the workflow waits Pending with argo's message; a lock that cannot be set up fails it.
func (e *Engine) acquireWorkflowLocks(ctx context.Context, p *Pass) (bool, error) {
	s := p.WF.Spec.Synchronization
	if s == nil {
		return true, nil
	}
	acquired, msg, _, err := e.tryLocks(ctx, p, synchronization.HolderKey(p.WF, ""), s)
	var api *apiError
	switch {
	case errors.As(err, &api):
		return false, err
	case err != nil:
		e.completeWorkflow(p, wfv1.WorkflowFailed, "Failed to acquire the synchronization lock. "+err.Error())
		return false, nil
	case !acquired && shutdown(p) == wfv1.ShutdownStrategyTerminate && p.WF.Status.Phase == wfv1.WorkflowPending:
		// argo ends a workflow terminated while it waits for its locks Succeeded, having run nothing.
		e.completeWorkflow(p, wfv1.WorkflowSucceeded, "")
		return false, nil
	case !acquired:
		p.WF.Status.Phase = wfv1.WorkflowPending
		p.WF.Status.Message = msg
		setLabel(p.WF, common.LabelKeyPhase, string(wfv1.WorkflowPending))
		return false, nil
	}
	p.WF.Status.Message = ""
	return true, nil
}

// nodeLocks takes the call's template locks (template synchronization) before its node runs. It returns
// proceed=false with the node to report while the node waits (Pending, argo's message) or cannot get its
// locks (Error, and the error for its caller, as argo's step group reports it).
func (e *Engine) nodeLocks(ctx context.Context, c *nodeCall) (n *wfv1.NodeStatus, proceed bool, err error) {
	p, tmpl := c.p, c.resolved
	n = c.node()
	if tmpl.Synchronization == nil || c.opts.attempt || (n != nil && !waitingForLock(n)) {
		return n, true, nil // a node that exists and does not wait got its locks when it started
	}
	holder := synchronization.HolderKey(p.WF, p.WF.NodeID(c.name))
	if n != nil {
		if ended, stop := e.endWait(p, n, holder, tmpl, c.opts); stop {
			return ended, ended == nil, nil // dropped: created again below; else ended here
		}
	}
	acquired, msg, waitingFor, err := e.tryLocks(ctx, p, holder, tmpl.Synchronization)
	var api *apiError
	switch {
	case errors.As(err, &api):
		return nil, false, err
	case err != nil:
		return e.errorNode(p, c.name, c.display, tmpl.Name, c.boundaryID, err.Error()), false, err
	case acquired && n != nil:
		p.forgetNode(n.ID) // created again below, as a node that runs
		return nil, true, nil
	case acquired:
		return nil, true, nil
	}
	if n == nil {
		n = p.newNode(nodeAt{c.name, c.display, tmpl.Name, c.boundaryID}, nodeTypeOf(tmpl), wfv1.NodePending, msg)
		n.Inputs = inputsOf(tmpl)
	}
	n.Message = msg
	n.SynchronizationStatus = &wfv1.NodeSynchronizationStatus{Waiting: waitingFor}
	p.setNode(n)
	return n, false, nil
}

// endWait ends a node's wait for its locks when the workflow no longer lets it start: shut down or past its
// deadline (the node is dropped and created again by the caller, ending as any new node would then), or
// past its template's timeout (Failed "timeout", as argo fails a Pending node).
func (e *Engine) endWait(p *Pass, n *wfv1.NodeStatus, holder string, tmpl *wfv1.Template, opts execOpts) (*wfv1.NodeStatus, bool) {
	onExit := opts.onExit || p.exiting
	d := deadline(p.WF)
	if s := shutdown(p); (s.Enabled() && !s.ShouldExecute(onExit)) || (!onExit && !d.IsZero() && !p.Now.Before(d)) {
		e.stopWaitingForLock(p, n, holder, tmpl)
		return nil, true
	}
	timeout, err := templateTimeout(tmpl)
	if err != nil || timeout <= 0 {
		return nil, false
	}
	if until := n.StartedAt.Add(timeout); p.Now.Before(until) {
		p.requeueBy(until)
		return nil, false
	}
	e.leaveQueues(p, holder, tmpl)
	n.SynchronizationStatus = nil
	return p.markPhase(n, wfv1.NodeFailed, timeoutMessage), true
}

// stopWaitingForLock drops a waiting node and its place in the locks' queues.
func (e *Engine) stopWaitingForLock(p *Pass, n *wfv1.NodeStatus, holder string, tmpl *wfv1.Template) {
	e.leaveQueues(p, holder, tmpl)
	p.forgetNode(n.ID)
}

// leaveQueues gives up holder's places in the queues of its template's locks.
func (e *Engine) leaveQueues(p *Pass, holder string, tmpl *wfv1.Template) {
	if locks, err := synchronization.Locks(tmpl.Synchronization, p.WF.Namespace); err == nil {
		e.locks().Release(p.WF.Status.Synchronization, holder, locks)
	}
}

// WaitingForLock reports whether a node was not started yet because a lock it needs is taken: it has no
// pod, and that is not a pod gone missing.
func WaitingForLock(n *wfv1.NodeStatus) bool { return waitingForLock(n) }

func waitingForLock(n *wfv1.NodeStatus) bool {
	return n.SynchronizationStatus != nil && n.SynchronizationStatus.Waiting != "" && !n.Phase.Completed()
}

// releaseFinishedNodes gives back the locks of nodes that are done (or gone), as argo releases a node's
// locks once it is fulfilled.
func (e *Engine) releaseFinishedNodes(p *Pass) {
	for _, h := range synchronization.Holding(p.WF.Status.Synchronization) {
		id := synchronization.NodeID(h.Holder)
		if id == "" || synchronization.WorkflowKey(h.Holder) != p.WF.Namespace+"/"+p.WF.Name {
			continue
		}
		if n := p.nodeByID(id); n != nil && !fulfilled(n) {
			continue
		}
		e.locks().Release(p.WF.Status.Synchronization, h.Holder, []synchronization.Lock{{Key: h.Key, Type: h.Type}})
	}
}

// releaseWorkflowLocks gives back everything a completed workflow holds or waits for and clears its
// synchronization status, as argo does.
func (e *Engine) releaseWorkflowLocks(p *Pass) {
	e.locks().ReleaseWorkflow(p.WF.Namespace + "/" + p.WF.Name)
	p.WF.Status.Synchronization = nil
	for id, n := range p.WF.Status.Nodes {
		if n.SynchronizationStatus != nil {
			n.SynchronizationStatus = nil
			p.WF.Status.Nodes[id] = n
		}
	}
}
