package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/podidentity"
	"github.com/wfguard/wfguard/taskresult"
)

// staleRequeue is the safety-net requeue for a skipped stale copy; the informer's own update event
// normally arrives first.
const staleRequeue = time.Second

// retrySoon is how soon a pass that deferred work (a read over budget, an action status not written, a
// release of an older incarnation's pod that failed) asks to run again.
const retrySoon = time.Second

// pass is one reconcile of one key: the engine's view plus what persistence needs. Every phase asks for
// the next pass through the engine's one channel, Pass.RequeueBy.
type pass struct {
	engine.Pass
	key string
	// loaded is the decoded copy the pass started from, the base to diff and re-apply against.
	loaded *decoded
	// waitingBefore maps nodes that waited for their result when the pass began to when the wait began.
	waitingBefore map[string]time.Time
	// start is the workflow's and its pod nodes' phases as the pass began (argo's phase-change metrics).
	start passStart
	// log is the controller's logger with the workflow's key and the phase running.
	log *slog.Logger
	// outcome is what the persist phase did with the pass.
	outcome persistOutcome
	// ended: a phase ended the pass before its last phase; the key is looked at again after endAfter.
	ended    bool
	endAfter time.Duration
}

// retrySoon asks for another pass shortly: this one deferred some of its work.
func (p *pass) retrySoon() { p.RequeueBy(p.Now.Add(retrySoon)) }

// end ends the pass after the running phase; the key is looked at again after after.
func (p *pass) end(after time.Duration) { p.ended, p.endAfter = true, after }

// runningPhases are a running workflow's pass, in order: the phases that decide its next status in
// memory, then the one write path. A failure of execute still writes what the pass decided: pods created
// before it are found again by name next pass.
func (c *Controller) runningPhases() []phase {
	return append([]phase{
		{name: PhaseRetryCleanup, run: c.cleanUpRetry},
		{name: PhaseDrainActions, run: c.drainActions},
		{name: PhaseFindMissingPods, run: c.findMissingPods},
		{name: PhaseMergeTaskResults, run: c.reconcileTaskResults},
		{name: PhaseAssessPods, run: assessPods},
		{name: PhaseExecute, run: c.execute, partial: true},
	}, c.writePath(c.applyEffects)...)
}

// retryPhases are the pass of a completed workflow a Retry runs again: the retried status and the
// action's write-ahead record go in one write, then the action's outcome is reported.
func (c *Controller) retryPhases(a *v1alpha1.WorkflowAction) []phase {
	applyRetry := func(ctx context.Context, p *pass) error { return c.applyRetry(ctx, p, a) }
	return append([]phase{{name: PhaseApplyRetry, run: applyRetry}}, c.writePath(c.reportActions)...)
}

// reconcile routes a key to its flow: a workflow that is gone, one that is completed, or one that runs.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	if err := c.drainer.ReportGone(ctx, key); err != nil {
		return 0, err
	}
	obj, exists, err := c.inf.workflows.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, fmt.Errorf("reading workflow %s from the cache: %w", key, err)
	}
	if !exists {
		return 0, c.reconcileGone(ctx, key)
	}
	orphanErr := c.releaser.ReleaseOrphans(ctx, key) // pods of an older workflow of the same name
	if orphanErr != nil {
		// Never let an old incarnation's pod block the current workflow: retry it on a later pass.
		c.log.Warn("releasing pods of a deleted workflow of the same name", "workflow", key, "err", orphanErr)
	}
	cached := obj.(*unstructured.Unstructured)
	u, ok := c.freshest(cached)
	if !ok {
		c.skipStale(key, cached)
		return staleRequeue, nil
	}
	if u != cached {
		c.metrics.ownCopyPasses.Inc()
	}
	completed := u.GetLabels()[common.LabelKeyCompleted] == "true"
	var (
		wf     *wfv1.Workflow
		ext    extstatus.Extensions
		loaded *decoded
	)
	if completed {
		c.decodes.forget(key)
		wf, ext, err = c.completed.decode(key, u)
	} else {
		c.completed.forget(key)
		wf, ext, loaded, err = c.decodes.decode(key, u)
	}
	switch {
	case err != nil:
		return 0, c.reconcileUndecodable(ctx, key, u, completed, err)
	case completed:
		return c.reconcileCompleted(ctx, key, u, wf, ext)
	}
	p := c.newPass(key, loaded, wf, ext)
	if orphanErr != nil {
		p.retrySoon()
	}
	return c.reconcileRunning(ctx, p)
}

// reconcileGone is the flow of a workflow that no longer exists: its actions fail WorkflowNotFound and its
// pods' finalizers go.
func (c *Controller) reconcileGone(ctx context.Context, key string) error {
	c.decodes.forget(key)
	c.completed.forget(key)
	c.demand.Forget(key)
	c.resultRemover.Forget(key)
	c.closeWindow(key)
	c.results.SetWaiting(key, 0)
	c.locks.ReleaseWorkflow(key) // a deleted workflow's locks go to the next in line
	c.throttle.Remove(key)
	return errors.Join(c.drainer.FailOrphans(ctx, key), c.releaser.ReleaseOrphans(ctx, key))
}

// reconcileCompleted is the flow of a completed workflow, which only a Retry writes again: actions that
// arrived late get their outcome, a Retry runs it again (retryCompleted), finalizers a failed release left behind go, and podGC and ttlStrategy
// resume (also after a restart). wf and ext may be shared with later passes (completedDecodes): read-only.
func (c *Controller) reconcileCompleted(ctx context.Context, key string, u *unstructured.Unstructured, wf *wfv1.Workflow, ext extstatus.Extensions) (time.Duration, error) {
	c.locks.ReleaseWorkflow(key) // completed: also when its completing write came from elsewhere
	c.throttle.Remove(key)
	c.engine.Estimates.Forget(wf.UID)
	c.closeWindow(key) // late pod and result details of a completed workflow wait for nothing
	c.retain.Trigger()
	pods := c.podsOf(wf)
	retry, settleErr := c.drainer.SettleCompleted(ctx, key, wf, ext.AppliedActions)
	settled, releaseErr := c.releaser.ReleasePersisted(ctx, wf, pods)
	if err := errors.Join(settleErr, releaseErr); err != nil {
		return 0, err
	}
	if retry != nil {
		return c.retryCompleted(ctx, key, u, wf, ext, retry)
	}
	return c.collectAndExpire(ctx, wf, withSettled(pods, settled))
}

// reconcileRunning is the flow of a running workflow (runningPhases).
func (c *Controller) reconcileRunning(ctx context.Context, p *pass) (time.Duration, error) {
	return c.runFlow(ctx, p, c.runningPhases())
}

// drainActions is the action phase (actions.Drainer): pending actions are applied to the in-memory
// workflow and recorded write-ahead in its status.
func (c *Controller) drainActions(ctx context.Context, p *pass) error {
	recordFull, err := c.drainer.Drain(ctx, p.key, p.WF, p.Ext, p.Now)
	if recordFull {
		p.retrySoon() // the waiting actions are drained once recorded outcomes are reported
	}
	if err != nil {
		// An action whose status cannot be written must not stall its workflow: retry it on a later pass.
		p.log.Warn("reporting workflow actions", "err", err)
		p.retrySoon()
	}
	return nil
}

// skipStale skips a cache copy older than our own last write (the stale-cache guard); the echo of our
// write brings the key back.
func (c *Controller) skipStale(key string, u *unstructured.Unstructured) {
	c.awaitEcho(key)
	if cur, ok, _ := c.inf.workflows.GetIndexer().GetByKey(key); ok && !c.isStale(cur.(*unstructured.Unstructured)) {
		c.changed(key) // the echo arrived before we noted we wait for it
	}
	c.metrics.staleSkips.Inc()
	c.log.Debug("skipping a cache copy older than our last write", "workflow", key, "resourceVersion", u.GetResourceVersion())
}

// newPass starts a running workflow's pass from its decoded cache copy.
func (c *Controller) newPass(key string, loaded *decoded, wf *wfv1.Workflow, ext extstatus.Extensions) *pass {
	return &pass{
		key:    key,
		loaded: loaded,
		start:  startOf(wf),
		log:    c.log.With("workflow", key),
		Pass: engine.Pass{
			WF:      wf,
			Ext:     &ext,
			Pods:    c.podsOf(wf),
			Now:     c.clock.Now().UTC().Truncate(time.Second),
			AtStart: engine.StartStateOf(wf),
			// Not written by this process: possibly started by another controller (a cutover from argo).
			Adopting: !c.wroteSinceStart(wf.UID),
		},
	}
}

// reconcileTaskResults is the task-result phase (taskresult.Observer): it merges results from the cache
// into nodes, reads past the cache where a node's wait needs it, and records what the pass saw.
func (c *Controller) reconcileTaskResults(ctx context.Context, p *pass) error {
	timeout, err := taskresult.TimeoutFor(p.WF, c.opts.TaskResultTimeout)
	if err != nil {
		p.Events = append(p.Events, engine.Event{Warning: true, Reason: ReasonInvalidAnnotation, Message: err.Error()})
	}
	p.TaskResultTimeout = timeout
	cached := c.resultsOf(p.key)
	obs := c.results.Observe(ctx, p.WF, p.Ext, p.Pods, cached, p.Now)
	p.waitingBefore, p.Results, p.ResultUnverified = obs.WaitingBefore, obs.Results, obs.Unverified
	p.StaleResults = taskresult.Stale(p.WF, cached, p.Pods)
	if obs.RequeueSoon {
		p.retrySoon()
	}
	for _, name := range obs.ReadPastCache {
		p.Events = append(p.Events, engine.Event{Reason: taskresult.ReasonReadPastCache,
			Message: fmt.Sprintf("Node %s: its complete task result was read from the API server; the cache had not delivered it", name)})
	}
	return nil
}

// assessPods is the pod phase (engine.AssessNodes): each pod node takes its pod's state.
func assessPods(_ context.Context, p *pass) error {
	engine.AssessNodes(&p.Pass)
	return nil
}

// ReasonInvalidAnnotation: a wfguard annotation on the workflow could not be read; its default applies.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// findMissingPods looks up on the server each pod a node should have that the cache lacks past the grace,
// before results are matched to pods and pods to nodes: a lagging pod watch must neither turn a running pod
// into "pod deleted" nor hide the pod a result is checked against. A final node's pod is not looked for:
// it was labelled completed, which took it out of the cache. A pod found labelled completed while its
// node is not final gets the label back (restoreWatch).
func (c *Controller) findMissingPods(ctx context.Context, p *pass) error {
	budget := c.opts.DirectReadBudget
	for id, n := range p.WF.Status.Nodes {
		// A departed pod (labelled completed by someone else, Releaser.Departed) is a stale copy: read now.
		departed := p.Pods[id] != nil && c.releaser.IsDeparted(p.Pods[id])
		if n.Type != wfv1.NodeTypePod || n.Phase.Fulfilled(n.TaskResultSynced) || (p.Pods[id] != nil && !departed) ||
			(!departed && p.Now.Sub(n.StartedAt.Time) < engine.PodMissingGrace) || engine.WaitingForLock(&n) || engine.NeverStarted(&n) {
			continue
		}
		if budget <= 0 {
			if p.Unverified == nil {
				p.Unverified = map[string]bool{}
			}
			p.Unverified[id] = true
			p.retrySoon()
			continue
		}
		budget--
		name := podspec.PodName(p.WF.Name, n.Name, n.TemplateName, n.ID)
		pod, err := c.kube.CoreV1().Pods(p.WF.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && string(pod.UID) != "" && podidentity.Check(podidentity.OwnerOf(p.WF), &n, pod) == podidentity.Match:
			p.Pods[id] = c.restoreWatch(ctx, p, &n, pod)
		case err != nil && !apierrors.IsNotFound(err):
			// Unknown: never conclude "deleted" from an error; look again on a later pass.
			if p.Unverified == nil {
				p.Unverified = map[string]bool{}
			}
			p.Unverified[id] = true
			p.retrySoon()
		case departed:
			// Gone, or replaced by a pod that is not this node's: the kept copy is of no use any more.
			c.releaser.ForgetDeparted(p.Pods[id])
			delete(p.Pods, id)
		}
	}
	return nil
}

// ReasonPodCompletedLabelRestored is the Warning Event on a workflow one of whose pods was labelled
// completed while its node was not final (podfinalizer.Releaser.RestoreWatch).
const ReasonPodCompletedLabelRestored = podfinalizer.ReasonCompletedLabelRestored

// restoreWatch has the completed label of a pod read past the cache set back when someone else set it
// while its node is not final (podfinalizer.Releaser.RestoreWatch). It returns the pod to assess.
func (c *Controller) restoreWatch(ctx context.Context, p *pass, n *wfv1.NodeStatus, pod *corev1.Pod) *corev1.Pod {
	restored, err := c.releaser.RestoreWatch(ctx, p.WF, n, pod)
	if err != nil {
		// Assess it as read; the next pass reads it again and retries.
		p.log.Warn("restoring the completed label of a pod whose node is not final", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		p.retrySoon()
	}
	return restored
}

// execute validates a new workflow and runs its templates.
func (c *Controller) execute(ctx context.Context, p *pass) error {
	if p.Ext.RetryCleanupSince != nil {
		return nil // no node runs again beside the previous run's pod of its name (cleanUpRetry)
	}
	started, err := c.engine.Start(&p.Pass)
	if err != nil || !started {
		return err
	}
	return c.engine.Execute(ctx, &p.Pass)
}
