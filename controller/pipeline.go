package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/extstatus"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/taskresult"
)

// staleRequeue is the safety-net requeue for a skipped stale copy; the informer's own update event
// normally arrives first.
const staleRequeue = time.Second

// pass is one reconcile of one key: the engine's view plus what persistence needs.
type pass struct {
	engine.Pass
	key string
	// loaded is the informer copy after a decode/encode round trip, the base to diff and re-apply against.
	loaded *unstructured.Unstructured
}

// reconcile runs the pipeline's phases in order; status is what passes between them.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	p, requeue, err := c.load(ctx, key)
	if p == nil || err != nil {
		return requeue, err
	}
	c.reconcileTaskResults(p)
	c.assessNodes(p)
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
	c.afterPersist(p, outcome == written)
	// Intent first: a finalizer goes only once the write recording its node's final state succeeded.
	if err := c.releaseFinalizers(ctx, p.WF, p.Pods); err != nil {
		return 0, err
	}
	return p.RequeueAfter(), nil
}

// releaseFinalizers removes the status finalizer from pods whose final state is persisted in wf.
func (c *Controller) releaseFinalizers(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) error {
	var errs []error
	for _, pod := range podfinalizer.Releasable(wf, pods) {
		if c.releasePending(pod) {
			continue // released already; the cache has not caught up
		}
		rv, err := c.releaser.Release(ctx, pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if rv == "" {
			continue // someone else removed it, or the pod is gone
		}
		c.releasedMu.Lock()
		c.released[pod.UID] = rv
		c.releasedMu.Unlock()
		c.metrics.finalizersReleased.Inc()
	}
	return errors.Join(errs...)
}

// releasePending reports whether the cached pod predates our release of its finalizer: an expectation,
// so a lagging pod cache does not cost a conflicting PATCH and a GET per pass.
func (c *Controller) releasePending(pod *corev1.Pod) bool {
	c.releasedMu.Lock()
	defer c.releasedMu.Unlock()
	rv, ok := c.released[pod.UID]
	return ok && compareResourceVersions(pod.ResourceVersion, rv) < 0
}

// observeReleased drops the expectation once the cache shows the pod without our finalizer, or gone.
func (c *Controller) observeReleased(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.releasedMu.Lock()
	defer c.releasedMu.Unlock()
	if !slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
		delete(c.released, pod.UID)
	}
}

// load reads the workflow from the cache. It returns nil (nothing to do) for a deleted or completed
// workflow, and for a copy older than our own last write (the stale-cache guard).
func (c *Controller) load(ctx context.Context, key string) (*pass, time.Duration, error) {
	obj, exists, err := c.inf.workflows.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, 0, fmt.Errorf("reading workflow %s from the cache: %w", key, err)
	}
	if !exists {
		return nil, 0, nil
	}
	u := obj.(*unstructured.Unstructured)
	if c.isStale(u) {
		c.metrics.staleSkips.Inc()
		c.log.Debug("skipping a cache copy older than our last write", "workflow", key, "resourceVersion", u.GetResourceVersion())
		return nil, staleRequeue, nil
	}
	wf, ext, err := extstatus.FromUnstructured(u)
	if err != nil {
		if u.GetLabels()[common.LabelKeyCompleted] == "true" {
			return nil, 0, nil
		}
		return nil, 0, c.failUndecodable(ctx, u, err)
	}
	if u.GetLabels()[common.LabelKeyCompleted] == "true" {
		// A completed workflow is never written again; only finalizers a failed release left behind remain.
		return nil, 0, c.releaseFinalizers(ctx, wf, c.podsOf(wf))
	}
	loaded, err := extstatus.ToUnstructured(wf, ext)
	if err != nil {
		return nil, 0, err
	}
	loaded.SetResourceVersion(u.GetResourceVersion())
	return &pass{
		key:    key,
		loaded: loaded,
		Pass: engine.Pass{
			WF:   wf,
			Ext:  &ext,
			Pods: c.podsOf(wf),
			Now:  c.clock.Now().UTC().Truncate(time.Second),
		},
	}, 0, nil
}

// reconcileTaskResults merges results into nodes and marks nodes synced (taskresult phase).
func (c *Controller) reconcileTaskResults(p *pass) {
	stats := taskresult.Merge(p.WF, c.resultsOf(p.key))
	if stats.Foreign > 0 {
		c.metrics.foreignResults.Add(float64(stats.Foreign))
	}
}

// assessNodes maps pods onto their nodes.
func (c *Controller) assessNodes(p *pass) { engine.AssessNodes(&p.Pass) }

// execute validates a new workflow and runs its templates.
func (c *Controller) execute(ctx context.Context, p *pass) error {
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
	for _, e := range p.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		c.recorder.Event(p.WF, typ, e.Reason, e.Message)
	}
	if p.WF.Status.Phase.Completed() {
		c.metrics.completed.WithLabelValues(string(p.WF.Status.Phase)).Inc()
		c.log.Info("workflow completed", "workflow", p.key, "phase", p.WF.Status.Phase, "message", p.WF.Status.Message)
	}
}

// failUndecodable fails a workflow whose object argo's types cannot read, keeping the object otherwise intact.
func (c *Controller) failUndecodable(ctx context.Context, u *unstructured.Unstructured, decodeErr error) error {
	u = u.DeepCopy()
	msg := fmt.Sprintf("cannot unmarshall spec: %v", decodeErr) // argo's wording
	_ = unstructured.SetNestedField(u.Object, string(wfv1.WorkflowFailed), "status", "phase")
	_ = unstructured.SetNestedField(u.Object, msg, "status", "message")
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[common.LabelKeyCompleted] = "true"
	labels[common.LabelKeyPhase] = string(wfv1.WorkflowFailed)
	u.SetLabels(labels)
	updated, err := c.dynamic.Resource(workflowsResource).Namespace(u.GetNamespace()).Update(ctx, u, updateOptions)
	if err != nil {
		return fmt.Errorf("failing undecodable workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	c.recordWrite(updated)
	c.recorder.Event(updated, corev1.EventTypeWarning, engine.ReasonWorkflowInvalid, msg)
	c.log.Warn("failed an undecodable workflow", "workflow", u.GetNamespace()+"/"+u.GetName(), "err", decodeErr)
	return nil
}

func (c *Controller) forgetReleased(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.releasedMu.Lock()
		delete(c.released, pod.UID)
		c.releasedMu.Unlock()
	}
}
