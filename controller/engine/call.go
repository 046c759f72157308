package engine

import (
	"context"
	"errors"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// nodeCall is one run of a template as one node: what the caller gives (the node's name, the template it
// calls with which arguments, where the node sits) and what the run works out on the way (the template as
// resolved, its arguments substituted), so each step of executeTemplate and each executor reads one value.
type nodeCall struct {
	p *Pass
	// name is the node's name (its ID is argo's NodeID(name)); display its display name, which a
	// display-name annotation of the template may change.
	name, display string
	call          templateCall
	args          wfv1.Arguments
	// boundaryID is the steps or DAG node the node runs under ("" for the entrypoint and exit handlers).
	boundaryID string
	// parentJSON is the calling steps or DAG template: whether a parent reads this node's outputs.result.
	parentJSON string
	opts       execOpts

	// written is the template as resolved, with the templateDefaults; resolved has its arguments
	// substituted (and an attempt's retry variables).
	written, resolved *wfv1.Template
	// after is what a node created by this call still gets once the call ends, in reverse order.
	after []func()
}

// node is the node of the call as stored now, or nil.
func (c *nodeCall) node() *wfv1.NodeStatus { return c.p.node(c.name) }

// thenOnCreated runs f with the node once the call ends, if the call created it.
func (c *nodeCall) thenOnCreated(f func(*wfv1.NodeStatus)) {
	c.after = append(c.after, func() {
		if created := c.p.node(c.name); created != nil {
			f(created)
		}
	})
}

// errorNode records that the call's node cannot run: see Engine.errorNode.
func (c *nodeCall) errorNode(e *Engine, msg string) *wfv1.NodeStatus {
	tmplName := c.call.templateName()
	if c.written != nil {
		tmplName = c.written.Name
	}
	return e.errorNode(c.p, c.name, c.display, tmplName, c.boundaryID, msg)
}

// stepResult is what one step of executeTemplate decided: done ends the call with node and err.
type stepResult struct {
	node *wfv1.NodeStatus
	err  error
	done bool
}

// next goes on to the following step.
var next = stepResult{}

func finish(n *wfv1.NodeStatus, err error) stepResult {
	return stepResult{node: n, err: err, done: true}
}

// templateStep is one named step of executeTemplate.
type templateStep struct {
	name string
	run  func(e *Engine, ctx context.Context, c *nodeCall) stepResult
}

// templateSteps is executeTemplate, in order: a node already decided ends the call; a pass past its
// deadline or its share of nodes, or a recursion past the depth, stops it; the template is resolved, its
// arguments substituted, and it is admitted (locks, memoization, retry, fail-fast and parallelism) before
// its kind's executor runs it (executors). Set in init: the steps call back into executeTemplate.
var templateSteps []templateStep

func init() {
	templateSteps = []templateStep{
		{"settled", (*Engine).settledNode},
		{"cancelled", (*Engine).cancelledPass},
		{"budget", (*Engine).budgetLeft},
		{"depth", (*Engine).withinDepth},
		{"old pod", (*Engine).retryOldPodWait},
		{"never started", (*Engine).rebuildNeverStarted},
		{"running pod", (*Engine).runningPodNode},
		{"resolve", (*Engine).resolveCalled},
		{"arguments", (*Engine).substituteArguments},
		{"display name", (*Engine).renameFromAnnotation},
		{"locks", (*Engine).takeNodeLocks},
		{"memoize", (*Engine).lookUpMemoized},
		{"retry", (*Engine).runRetried},
		{"admit", (*Engine).admitNewNode},
		{"run", (*Engine).runExecutor},
	}
}

// executeTemplate runs the call's template as its node; it returns the node (nil if not created, e.g. while
// parallelism holds it back).
func (e *Engine) executeTemplate(ctx context.Context, c *nodeCall) (*wfv1.NodeStatus, error) {
	c.p.depth++
	defer func() {
		for i := len(c.after) - 1; i >= 0; i-- {
			c.after[i]()
		}
		c.p.depth--
	}()
	for _, s := range templateSteps {
		if r := s.run(e, ctx, c); r.done {
			return r.node, r.err
		}
	}
	return nil, nil
}

// settledNode ends a call whose node is fulfilled: a daemoned Retry node goes on, as its attempt may end
// and then it retries.
func (e *Engine) settledNode(_ context.Context, c *nodeCall) stepResult {
	if n, ok := c.p.peekNode(c.name); ok && fulfilled(&n) && !daemonedRetry(&n) {
		return finish(c.node(), nil)
	}
	return next
}

func (e *Engine) cancelledPass(ctx context.Context, c *nodeCall) stepResult {
	if err := passCancelled(ctx, c.name); err != nil {
		return finish(nil, err)
	}
	return next
}

// budgetLeft holds back a new node once the pass created its share: a later pass starts it, as it does a
// node parallelism holds back.
func (e *Engine) budgetLeft(_ context.Context, c *nodeCall) stepResult {
	if _, exists := c.p.peekNode(c.name); !exists && c.p.budgetSpent() {
		return finish(nil, nil)
	}
	return next
}

// withinDepth ends a call nested past MaxTemplateDepth with a recursionError, which ends the workflow.
func (e *Engine) withinDepth(_ context.Context, c *nodeCall) stepResult {
	if c.p.depth <= MaxTemplateDepth {
		return next
	}
	rec := &recursionError{node: c.name}
	if n := c.node(); n != nil {
		return finish(c.p.markPhase(n, wfv1.NodeError, rec.Error()), rec)
	}
	n := c.p.newNode(nodeAt{c.name, c.display, c.call.templateName(), c.boundaryID}, wfv1.NodeTypeSkipped, wfv1.NodeError, rec.Error())
	c.p.Events = append(c.p.Events, nodeEvent(n))
	return finish(n, rec)
}

// retryOldPodWait forgets a node whose pod was never created, its name taken by an earlier workflow's
// pod: it is built again below (same node ID) and its create retried, keeping when the wait began.
func (e *Engine) retryOldPodWait(_ context.Context, c *nodeCall) stepResult {
	if n, ok := c.p.peekNode(c.name); ok && n.Type == wfv1.NodeTypePod && waitingForOldPod(&n) {
		if c.p.oldPodWaits == nil {
			c.p.oldPodWaits = map[string]wfv1.NodeStatus{}
		}
		c.p.oldPodWaits[n.ID] = n
		c.p.forgetNode(n.ID)
	}
	return next
}

// rebuildNeverStarted forgets a pod node that never started (NeverStarted) and has no pod: it is built and
// its pod created below as a new node's, as argo creates the pod of a Pending node that has none.
func (e *Engine) rebuildNeverStarted(_ context.Context, c *nodeCall) stepResult {
	if n, ok := c.p.peekNode(c.name); ok && NeverStarted(&n) && c.p.Pods[n.ID] == nil {
		forgetContainerNodes(c.p, n.ID)
		c.p.forgetNode(n.ID)
	}
	return next
}

// runningPodNode ends a call whose pod node exists: its template ran when the node was created; only its
// pod's state and its timeout matter now.
func (e *Engine) runningPodNode(ctx context.Context, c *nodeCall) stepResult {
	n := c.node()
	if n == nil || (n.Type != wfv1.NodeTypePod && n.Type != wfv1.NodeTypeSkipped) || waitingForLock(n) {
		return next
	}
	if n.Type == wfv1.NodeTypePod {
		if err := e.enforceTimeout(ctx, c.p, n, c.p.templateOf(n), c.args, c.opts); err != nil {
			return finish(nil, err)
		}
	}
	return finish(c.node(), nil)
}

// resolveCalled finds the called template and merges the templateDefaults under it. A template that is
// gone (a WorkflowTemplate deleted) errors the node, naming it, and its caller decides.
func (e *Engine) resolveCalled(ctx context.Context, c *nodeCall) stepResult {
	tmpl, err := e.resolveTemplate(ctx, c.p, c.call)
	if err != nil {
		var api *apiError
		if errors.As(err, &api) {
			return finish(nil, err)
		}
		if c.call.ref == nil && c.p.base.local() {
			return finish(nil, err) // argo's validation rejects these; kept as the caller's error
		}
		n := c.errorNode(e, err.Error())
		e.stampRef(c.p, n, c.call)
		return finish(n, err)
	}
	if c.written, err = withTemplateDefaults(&c.p.WF.Spec, tmpl); err != nil {
		return finish(c.errorNode(e, err.Error()), nil)
	}
	if c.call.ref != nil && c.node() == nil {
		c.thenOnCreated(func(n *wfv1.NodeStatus) { e.stampRef(c.p, n, c.call) })
	}
	return next
}

// substituteArguments resolves the template's inputs from the call's arguments (and an attempt's retry
// variables).
func (e *Engine) substituteArguments(_ context.Context, c *nodeCall) stepResult {
	globals := common.Parameters(c.p.globals())
	resolved, err := e.processArgs(c.written, c.args, globals, c.p.WF.Namespace, c.p.configMaps())
	if err == nil && c.opts.retryParams != nil {
		resolved, err = common.SubstituteParams(resolved, globals, c.opts.retryParams)
	}
	if err != nil {
		return finish(c.errorNode(e, err.Error()), nil)
	}
	c.resolved = resolved
	return next
}

// renameFromAnnotation applies a display-name annotation: argo renames a retry node, not its attempts.
func (e *Engine) renameFromAnnotation(_ context.Context, c *nodeCall) stepResult {
	if c.opts.attempt {
		return next
	}
	c.opts.attemptBase = c.display
	display, err := annotatedDisplayName(c.resolved, c.display)
	c.display = display
	if err != nil {
		return finish(c.errorNode(e, err.Error()), nil)
	}
	return next
}

func (e *Engine) takeNodeLocks(ctx context.Context, c *nodeCall) stepResult {
	if n, proceed, err := e.nodeLocks(ctx, c); !proceed {
		return finish(n, err)
	}
	return next
}

// lookUpMemoized serves a memoized template from its cache; on a miss the node created next carries its
// memoization status, so its outputs are saved once it succeeds.
func (e *Engine) lookUpMemoized(ctx context.Context, c *nodeCall) stepResult {
	if c.resolved.Memoize == nil || c.opts.attempt || c.node() != nil {
		return next
	}
	n, status, done, err := e.memoLookup(ctx, c)
	if done {
		return finish(n, err)
	}
	c.after = append(c.after, func() { stampMemoization(c.p, c.name, status) })
	return next
}

// runRetried hands a template with a retryStrategy to its Retry node, which runs the attempts.
func (e *Engine) runRetried(ctx context.Context, c *nodeCall) stepResult {
	strategy := retryStrategyOf(c.p.WF, c.resolved)
	if strategy == nil || c.opts.attempt {
		return next
	}
	c.opts.writtenRetryExpr = retryStrategyOf(c.p.WF, c.written).Expression
	return finish(e.executeRetry(ctx, c, strategy))
}

// admitNewNode holds a new node back while fail-fast or parallelism hold its boundary (a running node's end,
// a pod event, brings the next pass), and flags one it creates.
func (e *Engine) admitNewNode(_ context.Context, c *nodeCall) stepResult {
	if c.node() != nil {
		return next
	}
	if failFastHolds(c.p, c.boundaryID) || parallelismReached(c.p, c.boundaryID) {
		return finish(nil, nil)
	}
	if flag := c.opts.flag; flag != nil {
		c.thenOnCreated(func(n *wfv1.NodeStatus) {
			if n.NodeFlag == nil {
				n.NodeFlag = flag
				c.p.setNode(n)
			}
		})
	}
	return next
}
