package controller

import (
	"context"
	"errors"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/taskresult"
)

// writePath is every flow's one write: persist the pass, publish what it did, then apply the effects that
// must follow the write that records them (apply).
func (c *Controller) writePath(apply effects) []phase {
	return []phase{
		{name: PhasePersist, run: c.persistPass, persists: true},
		{name: PhaseAfterPersist, run: c.afterPersist, persists: true},
		{name: PhaseEffects, run: c.effectsOf(apply)},
	}
}

// effects are what follows a flow's persisted pass, decided from persisted: the workflow as stored.
type effects func(ctx context.Context, p *pass, persisted *wfv1.Workflow) error

// persistPass is the persist phase: the pass's one write (persist).
func (c *Controller) persistPass(ctx context.Context, p *pass) error {
	outcome, err := c.persist(ctx, p)
	p.outcome = outcome
	return err
}

// effectsOf is the effects phase running apply. A dropped pass has none: our view lost to a newer one, and
// the next pass starts from it. A deferred pass continues like an unchanged one: it decided nothing the
// stored copy does not record (the same nodes fulfilled), so releases and pod GC may follow, deciding from
// the stored copy itself, so I5 does not rest on informationalOnly alone; its requeue writes it later.
func (c *Controller) effectsOf(apply effects) func(context.Context, *pass) error {
	return func(ctx context.Context, p *pass) error {
		persisted := p.WF
		switch p.outcome {
		case dropped:
			p.end(staleRequeue)
			return nil
		case deferred:
			persisted = storedCopy(p)
		}
		if err := c.opts.Points.Hit(ctx, faultinject.PointAfterWorkflowPersist); err != nil {
			return err
		}
		return apply(ctx, p, persisted)
	}
}

// storedCopy is the workflow a deferred pass started from: the stored copy that decides its effects.
func storedCopy(p *pass) *wfv1.Workflow { return p.loaded.wf.DeepCopy() }

// reportActions reports the outcomes of the actions the persisted pass recorded (a Retry of a completed
// workflow's): their intent is stored.
func (c *Controller) reportActions(ctx context.Context, p *pass, _ *wfv1.Workflow) error {
	return c.drainer.Report(ctx, p.key, p.WF, p.Ext.AppliedActions)
}

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

// afterPersist publishes what the persisted pass did: Events and metrics.
func (c *Controller) afterPersist(_ context.Context, p *pass) error {
	if p.outcome != written {
		return nil
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
		p.log.Info("workflow completed", "phase", p.WF.Status.Phase, "message", p.WF.Status.Message)
	}
	return nil
}

// emitCustomMetrics records the workflow's custom metrics of a persisted pass; the engine checked each one,
// so a refusal here (another workflow declared the name since) is only logged, as argo logs it.
func (c *Controller) emitCustomMetrics(p *pass) {
	for _, em := range p.Metrics {
		if err := c.custom.Emit(em); err != nil {
			p.log.Warn("custom metric not recorded", "err", err)
		}
	}
}
