package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
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
}

// retrySoon asks for another pass shortly: this one deferred some of its work.
func (p *pass) retrySoon() { p.RequeueBy(p.Now.Add(retrySoon)) }

// phase is one named step of a running workflow's pass; status is the contract between phases.
type phase struct {
	name string
	run  func(context.Context, *pass)
}

// decisionPhases decide a running workflow's next status in memory, in this order, before the engine
// executes its templates and the pass is persisted.
func (c *Controller) decisionPhases() []phase {
	return []phase{
		{"drain actions", c.drainActions},
		{"find missing pods", c.findMissingPods},
		{"merge task results", c.reconcileTaskResults},
		{"assess pods", func(_ context.Context, p *pass) { engine.AssessNodes(&p.Pass) }},
	}
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

// reconcileRunning is the flow of a running workflow: the decision phases, execute, persist, then the
// effects that must follow the write that records them (action outcomes, finalizer releases, pod GC).
func (c *Controller) reconcileRunning(ctx context.Context, p *pass) (time.Duration, error) {
	if err := c.cleanUpRetry(ctx, p); err != nil {
		return 0, err
	}
	for _, ph := range c.decisionPhases() {
		ph.run(ctx, p)
	}
	if err := c.execute(ctx, p); err != nil {
		// Pods created before the error are found again by name next pass; status from this pass is kept.
		outcome, perr := c.persist(ctx, p)
		if perr != nil {
			return 0, fmt.Errorf("%w (and persisting the partial pass: %v)", err, perr)
		}
		c.afterPersist(p, outcome == written)
		return 0, err
	}
	outcome, err := c.persist(ctx, p)
	if err != nil {
		return 0, err
	}
	if outcome == dropped {
		// Our view lost to a newer one; the next pass starts from it.
		return staleRequeue, nil
	}
	// A deferred pass continues like an unchanged one: it decided nothing the stored copy does not record
	// (the same nodes fulfilled), so releases and pod GC may follow; its requeue writes it later. They decide
	// from the stored copy itself, so I5 does not rest on informationalOnly alone.
	persisted := p.WF
	if outcome == deferred {
		persisted = storedCopy(p)
	}
	c.afterPersist(p, outcome == written)
	if err := c.opts.Points.Hit(ctx, faultinject.PointAfterWorkflowPersist); err != nil {
		return 0, err
	}
	if err := c.applyEffects(ctx, p, persisted); err != nil {
		return 0, err
	}
	return p.RequeueAfter(), nil
}

// storedCopy is the workflow a deferred pass started from: the stored copy that decides its effects.
func storedCopy(p *pass) *wfv1.Workflow { return p.loaded.wf.DeepCopy() }

// applyEffects follows a persisted pass. Intent first: outcomes and finalizer releases only follow the
// write that records them, and both decide from what was persisted.
func (c *Controller) applyEffects(ctx context.Context, p *pass, persisted *wfv1.Workflow) error {
	actErr := c.drainer.Report(ctx, p.key, p.WF, p.Ext.AppliedActions)
	if errors.Is(actErr, faultinject.ErrCrash) {
		return actErr // a dead process releases nothing
	}
	settled, releaseErr := c.releaser.ReleasePersisted(ctx, persisted, p.Pods)
	if err := errors.Join(actErr, releaseErr); err != nil {
		return err
	}
	gcAfter, err := c.collectAndExpire(ctx, persisted, withSettled(p.Pods, settled))
	if err != nil {
		return err
	}
	if gcAfter > 0 {
		p.RequeueBy(p.Now.Add(gcAfter))
	}
	return nil
}

// withSettled is pods with the copies a release just patched in place of the cached ones: the completed
// label takes them out of the cache, so podGC decides about them from these copies.
func withSettled(pods map[string]*corev1.Pod, settled []*corev1.Pod) map[string]*corev1.Pod {
	if len(settled) == 0 {
		return pods
	}
	out := make(map[string]*corev1.Pod, len(pods))
	for id, pod := range pods {
		out[id] = pod
	}
	for _, pod := range settled {
		out[pod.Annotations[common.AnnotationKeyNodeID]] = pod
	}
	return out
}

// drainActions is the action phase (actions.Drainer): pending actions are applied to the in-memory
// workflow and recorded write-ahead in its status.
func (c *Controller) drainActions(ctx context.Context, p *pass) {
	recordFull, err := c.drainer.Drain(ctx, p.key, p.WF, p.Ext, p.Now)
	if recordFull {
		p.retrySoon() // the waiting actions are drained once recorded outcomes are reported
	}
	if err != nil {
		// An action whose status cannot be written must not stall its workflow: retry it on a later pass.
		c.log.Warn("reporting workflow actions", "workflow", p.key, "err", err)
		p.retrySoon()
	}
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
func (c *Controller) reconcileTaskResults(ctx context.Context, p *pass) {
	timeout, err := taskresult.TimeoutFor(p.WF, c.opts.TaskResultTimeout)
	if err != nil {
		p.Events = append(p.Events, engine.Event{Warning: true, Reason: ReasonInvalidAnnotation, Message: err.Error()})
	}
	p.TaskResultTimeout = timeout
	obs := c.results.Observe(ctx, p.WF, p.Ext, p.Pods, c.resultsOf(p.key), p.Now)
	p.waitingBefore, p.Results, p.ResultUnverified = obs.WaitingBefore, obs.Results, obs.Unverified
	if obs.RequeueSoon {
		p.retrySoon()
	}
	for _, name := range obs.ReadPastCache {
		p.Events = append(p.Events, engine.Event{Reason: taskresult.ReasonReadPastCache,
			Message: fmt.Sprintf("Node %s: its complete task result was read from the API server; the cache had not delivered it", name)})
	}
}

// ReasonInvalidAnnotation: a wfguard annotation on the workflow could not be read; its default applies.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// findMissingPods looks up on the server each pod a node should have that the cache lacks past the grace,
// before results are matched to pods and pods to nodes: a lagging pod watch must neither turn a running pod
// into "pod deleted" nor hide the pod a result is checked against. A final node's pod is not looked for:
// it was labelled completed, which took it out of the cache. A pod found labelled completed while its
// node is not final gets the label back (restoreWatch).
func (c *Controller) findMissingPods(ctx context.Context, p *pass) {
	budget := c.opts.DirectReadBudget
	for id, n := range p.WF.Status.Nodes {
		// A departed pod (labelled completed by someone else, Releaser.Departed) is a stale copy: read now.
		departed := p.Pods[id] != nil && c.releaser.IsDeparted(p.Pods[id])
		if n.Type != wfv1.NodeTypePod || n.Phase.Fulfilled(n.TaskResultSynced) || (p.Pods[id] != nil && !departed) ||
			(!departed && p.Now.Sub(n.StartedAt.Time) < engine.PodMissingGrace) || engine.WaitingForLock(&n) {
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
		c.log.Warn("restoring the completed label of a pod whose node is not final", "workflow", p.key, "pod", pod.Namespace+"/"+pod.Name, "err", err)
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

// afterPersist publishes what the persisted pass did: Events and metrics.
func (c *Controller) afterPersist(p *pass, wrote bool) {
	if !wrote {
		return
	}
	nodeEvents := controllerconfig.CurrentOf(c.opts.Config).NodeEvents.IsEnabled()
	for _, e := range p.Events {
		if !nodeEvents && engine.IsNodeEvent(e.Reason) {
			continue // the controller config's nodeEvents.enabled: false
		}
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		c.recorder.Event(p.WF, typ, e.Reason, e.Message)
	}
	timeouts := 0
	for _, e := range p.Events {
		if e.Reason == taskresult.ReasonTimeout {
			timeouts++
		}
	}
	c.results.Persisted(p.key, p.WF, p.Ext, p.waitingBefore, timeouts, p.Now)
	c.emitCustomMetrics(p)
	c.reportPhaseChanges(p)
	if p.WF.Status.Phase.Completed() {
		c.throttle.Remove(p.key)
		c.metrics.completed.WithLabelValues(string(p.WF.Status.Phase)).Inc()
		c.log.Info("workflow completed", "workflow", p.key, "phase", p.WF.Status.Phase, "message", p.WF.Status.Message)
	}
}

// emitCustomMetrics records the workflow's custom metrics of a persisted pass; the engine checked each one,
// so a refusal here (another workflow declared the name since) is only logged, as argo logs it.
func (c *Controller) emitCustomMetrics(p *pass) {
	for _, em := range p.Metrics {
		if err := c.custom.Emit(em); err != nil {
			c.log.Warn("custom metric not recorded", "workflow", p.key, "err", err)
		}
	}
}
