package podfinalizer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/podidentity"
)

// ReasonFinalizersReleased is the Event recorded on a workflow when its pods' finalizers are released.
const ReasonFinalizersReleased = "PodFinalizersReleased"

// Config is what a Releaser needs from the controller that runs it. Every field but Points is required.
type Config struct {
	Kube kubernetes.Interface
	// Pods is the controller's pod cache; PodsByWorkflowKey and PodsByWorkflowUID name its indexes of pods by
	// workflow label ("namespace/name") and by owner workflow UID.
	Pods                                 cache.Indexer
	PodsByWorkflowKey, PodsByWorkflowUID string
	// Workflows is the controller's workflow cache, which holds every workflow of its instance, completed ones
	// included: a pod whose workflow UID is not in it is an orphan. WorkflowsByUID names its index by UID.
	Workflows      cache.Indexer
	WorkflowsByUID string
	// Ours reports whether pod is a pod the controller created for owner (podidentity), and reports one that
	// is not, as the pipeline does for every pod it ignores.
	Ours func(owner podidentity.Owner, pod *corev1.Pod) bool
	// Enqueue asks for a pass of the workflow a pod is labelled for: the sweep's orphans are released by that
	// key's pass, serialized with everything else done for the key.
	Enqueue func(pod *corev1.Pod)
	// StatusFinalizer is --pod-status-finalizer; a release while it is off counts as "disabled".
	StatusFinalizer bool
	// SweepInterval is how often Sweep looks for orphaned pods (0 disables the sweep; pod events and
	// start-up still find them).
	SweepInterval time.Duration
	// Points are the named crash points (faultinject.PointBeforeFinalizerRelease); nil passes everywhere.
	Points   *faultinject.Points
	Clock    clock.PassiveClock
	Log      *slog.Logger
	Recorder record.EventRecorder
	// Registry gets the pod finalizer metrics (metrics.go).
	Registry prometheus.Registerer
}

// Releaser removes the status finalizer from pods: from a workflow's pods once their final state is
// persisted (ReleasePersisted), from every pod of a workflow that can no longer be reconciled
// (ReleaseByOwner) and from pods whose workflow is gone (ReleaseOrphans, found again by Sweep). Each removal
// is expected until the pod cache shows it (PodUpdated, PodDeleted).
type Releaser struct {
	cfg          Config
	metrics      *metrics
	expectations Expectations
}

// NewReleaser builds a Releaser and registers its metrics.
func NewReleaser(cfg Config) (*Releaser, error) {
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Releaser{cfg: cfg, metrics: m}, nil
}

// ReleasePersisted removes the status finalizer from pods whose final state is persisted in wf.
func (r *Releaser) ReleasePersisted(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) error {
	byReason := map[string][]*corev1.Pod{}
	now := r.cfg.Clock.Now()
	for _, pod := range Releasable(wf, pods) {
		if r.expectations.Pending(pod) {
			continue // released already; the cache has not caught up
		}
		node, ok := wf.Status.Nodes[pod.Annotations[common.AnnotationKeyNodeID]]
		if !wf.Status.Phase.Completed() && (!ok || !node.Fulfilled()) {
			// Releasable never offers this; counting it keeps the claim checkable.
			r.metrics.releasedBeforePersist.Inc()
		}
		reason := releasePersisted
		switch {
		case pod.DeletionTimestamp != nil:
			reason = releaseDeleting
		case !r.cfg.StatusFinalizer:
			reason = releaseDisabled
		}
		if ok && !node.FinishedAt.IsZero() {
			r.metrics.releaseLatency.Observe(now.Sub(node.FinishedAt.Time).Seconds())
		}
		byReason[reason] = append(byReason[reason], pod)
	}
	if len(byReason) > 0 {
		if err := r.cfg.Points.Hit(ctx, faultinject.PointBeforeFinalizerRelease); err != nil {
			return err
		}
	}
	var errs []error
	released := 0
	for reason, due := range byReason {
		if err := r.releaseAll(ctx, due, reason); err != nil {
			errs = append(errs, err)
		}
		released += len(due)
	}
	if released > 0 {
		r.cfg.Recorder.Eventf(wf, corev1.EventTypeNormal, ReasonFinalizersReleased,
			"Released the %s finalizer of %d pods whose final state is recorded", Finalizer, released)
	}
	return errors.Join(errs...)
}

// ReleaseByOwner releases every pod owned (by UID) by a workflow that can no longer be reconciled.
func (r *Releaser) ReleaseByOwner(ctx context.Context, owner podidentity.Owner) error {
	held := func(pod *corev1.Pod) bool {
		return slices.Contains(pod.Finalizers, Finalizer) && r.cfg.Ours(owner, pod)
	}
	return r.releaseIndexed(ctx, r.cfg.PodsByWorkflowUID, string(owner.UID), held, releasePersisted)
}

// releaseIndexed releases the cached pods under index=value that match, skipping those already released.
func (r *Releaser) releaseIndexed(ctx context.Context, index, value string, match func(*corev1.Pod) bool, reason string) error {
	objs, err := r.cfg.Pods.ByIndex(index, value)
	if err != nil {
		return err
	}
	var due []*corev1.Pod
	for _, o := range objs {
		if pod := o.(*corev1.Pod); match(pod) && !r.expectations.Pending(pod) {
			due = append(due, pod)
		}
	}
	return r.releaseAll(ctx, due, reason)
}

// releaseParallelism bounds concurrent finalizer patches within one pass (the client's QPS bounds the rest).
const releaseParallelism = 16

// releaseAll releases pods concurrently; a workflow's thousand pods need not wait on each other.
func (r *Releaser) releaseAll(ctx context.Context, pods []*corev1.Pod, reason string) error {
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, releaseParallelism)
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.release(ctx, pod, reason); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// release removes our finalizer from pod and records the expectation and the reason.
func (r *Releaser) release(ctx context.Context, pod *corev1.Pod, reason string) error {
	rv, err := RemoveFinalizer(ctx, r.cfg.Kube, pod)
	if apierrors.IsForbidden(err) {
		// A retry cannot succeed until RBAC changes: log and count it; the orphan sweep tries again later.
		r.metrics.releaseErrors.Inc()
		r.cfg.Log.Error("not allowed to release the status finalizer", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return nil
	}
	if err != nil {
		r.metrics.releaseErrors.Inc()
		return err
	}
	if rv == "" {
		return nil // someone else removed it, or the pod is gone
	}
	r.expectations.Expect(pod.UID, rv)
	r.metrics.finalizersReleased.WithLabelValues(reason).Inc()
	r.cfg.Log.Debug("released the status finalizer", "pod", pod.Namespace+"/"+pod.Name, "reason", reason)
	return nil
}

// PodUpdated is the pod cache's update handler: it drops the expectation once the cache shows the pod
// without our finalizer. Objects other than pods are ignored.
func (r *Releaser) PodUpdated(obj any) {
	if pod, ok := podOf(obj); ok {
		r.expectations.Observed(pod)
	}
}

// PodDeleted is the pod cache's delete handler: a pod that is gone needs no expectation.
func (r *Releaser) PodDeleted(obj any) {
	if pod, ok := podOf(obj); ok {
		r.expectations.Forget(pod.UID)
	}
}

func podOf(obj any) (*corev1.Pod, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	return pod, ok
}
