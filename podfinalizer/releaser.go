package podfinalizer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
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
	"github.com/wfguard/wfguard/internal/fanout"
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
	departed     departed
}

// NewReleaser builds a Releaser and registers its metrics.
func NewReleaser(cfg Config) (*Releaser, error) {
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Releaser{cfg: cfg, metrics: m, departed: newDeparted(cfg.Pods)}, nil
}

// ReleasePersisted settles the pods whose final state is persisted in wf (Settleable): it removes the
// status finalizer and labels them completed, in one patch per pod. It returns the patched pods, which
// the completed label takes out of the pod cache: podGC decides about them from these copies.
func (r *Releaser) ReleasePersisted(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) ([]*corev1.Pod, error) {
	byReason := map[string][]Settlement{}
	now := r.cfg.Clock.Now()
	released := 0
	for _, s := range Settleable(wf, pods) {
		if r.expectations.Pending(s.Pod) {
			continue // settled already; the cache has not caught up
		}
		node, ok := wf.Status.Nodes[s.Pod.Annotations[common.AnnotationKeyNodeID]]
		if s.Release && !wf.Status.Phase.Completed() && (!ok || !node.Fulfilled()) {
			// Settleable never offers this; counting it keeps the claim checkable.
			r.metrics.releasedBeforePersist.Inc()
		}
		reason := releasePersisted
		switch {
		case !s.Release:
			reason = "" // only labelled completed: its finalizer went earlier, or it never had one
		case s.Pod.DeletionTimestamp != nil:
			reason = releaseDeleting
		case !r.cfg.StatusFinalizer:
			reason = releaseDisabled
		}
		if s.Release {
			released++
			if ok && !node.FinishedAt.IsZero() {
				r.metrics.releaseLatency.Observe(now.Sub(node.FinishedAt.Time).Seconds())
			}
		}
		byReason[reason] = append(byReason[reason], s)
	}
	if released > 0 {
		if err := r.cfg.Points.Hit(ctx, faultinject.PointBeforeFinalizerRelease); err != nil {
			return nil, err
		}
	}
	var errs []error
	var settled []*corev1.Pod
	for reason, due := range byReason {
		done, err := r.settleAll(ctx, due, reason)
		if err != nil {
			errs = append(errs, err)
		}
		settled = append(settled, done...)
	}
	if released > 0 {
		r.cfg.Recorder.Eventf(wf, corev1.EventTypeNormal, ReasonFinalizersReleased,
			"Released the %s finalizer of %d pods whose final state is recorded", Finalizer, released)
	}
	return settled, errors.Join(errs...)
}

// ReleaseByOwner releases every pod owned (by UID) by a workflow that can no longer be reconciled, and
// labels it completed: nothing will ever look at it again.
func (r *Releaser) ReleaseByOwner(ctx context.Context, owner podidentity.Owner) error {
	held := func(pod *corev1.Pod) bool {
		return slices.Contains(pod.Finalizers, Finalizer) && r.cfg.Ours(owner, pod)
	}
	return r.releaseIndexed(ctx, r.cfg.PodsByWorkflowUID, string(owner.UID), held, alwaysLabel, releasePersisted)
}

// alwaysLabel labels every released pod completed.
func alwaysLabel(*corev1.Pod) bool { return true }

// releaseIndexed releases the cached pods under index=value that match, skipping those already settled,
// and labels completed those that label says to.
func (r *Releaser) releaseIndexed(ctx context.Context, index, value string, match, label func(*corev1.Pod) bool, reason string) error {
	objs, err := r.cfg.Pods.ByIndex(index, value)
	if err != nil {
		return err
	}
	objs = append(objs, r.departed.byIndex(index, value)...)
	var due []Settlement
	for _, o := range objs {
		if pod := o.(*corev1.Pod); match(pod) && !r.expectations.Pending(pod) {
			due = append(due, Settlement{Pod: pod, Release: true, Complete: label(pod)})
		}
	}
	_, err = r.settleAll(ctx, due, reason)
	return err
}

// ReleaseParallelism bounds concurrent settling patches within one pass. The client's QPS is meant to bound
// the rate: each patch waits out the API server's latency, which under load reaches 30-40 ms, so 16 in
// flight held a 5,000-pod sweep at 400-450 patches a second, below a QPS of 500.
const ReleaseParallelism = 32

// settleAll settles pods concurrently (a workflow's thousand pods need not wait on each other) and returns
// the patched pods.
func (r *Releaser) settleAll(ctx context.Context, due []Settlement, reason string) ([]*corev1.Pod, error) {
	updated := make([]*corev1.Pod, len(due))
	errs := fanout.Each(ctx, ReleaseParallelism, len(due), func(i int) error {
		var err error
		updated[i], err = r.settle(ctx, due[i], reason)
		return err
	})
	var settled []*corev1.Pod
	for _, pod := range updated {
		if pod != nil {
			settled = append(settled, pod)
		}
	}
	return settled, errors.Join(errs...)
}

// settle patches one pod as s asks and records the expectation and the reason.
func (r *Releaser) settle(ctx context.Context, s Settlement, reason string) (*corev1.Pod, error) {
	updated, err := Settle(ctx, r.cfg.Kube, s)
	if apierrors.IsForbidden(err) {
		// A retry cannot succeed until RBAC changes: log and count it; the orphan sweep tries again later.
		r.metrics.releaseErrors.Inc()
		r.cfg.Log.Error("not allowed to settle the pod (release its status finalizer, label it completed)", "pod", s.Pod.Namespace+"/"+s.Pod.Name, "err", err)
		return nil, nil
	}
	if err != nil {
		r.metrics.releaseErrors.Inc()
		return nil, err
	}
	if updated == nil {
		r.departed.drop(s.Pod)
		return nil, nil // nothing left to do, or the pod is gone
	}
	r.expectations.Expect(updated.UID, updated.ResourceVersion)
	if kept := r.departed.get(s.Pod); kept != nil && !slices.Contains(updated.Finalizers, Finalizer) {
		r.departed.drop(s.Pod)
		// A watch reports a pod leaving its selector with the version of the change that made it leave:
		// the same version as this patch means this patch did (its expectation came too late).
		if kept.ResourceVersion != updated.ResourceVersion && slices.Contains(s.Pod.Finalizers, Finalizer) {
			r.metrics.departedReleased.Inc()
			r.cfg.Log.Warn("released the status finalizer of a pod that had left the pod cache holding it (someone else changed a label the cache selects on)",
				"pod", s.Pod.Namespace+"/"+s.Pod.Name)
		}
	}
	if s.Release && !slices.Contains(updated.Finalizers, Finalizer) && slices.Contains(s.Pod.Finalizers, Finalizer) {
		r.metrics.finalizersReleased.WithLabelValues(reason).Inc()
	}
	if IsCompleted(updated) && !IsCompleted(s.Pod) {
		r.metrics.labelledCompleted.Inc()
	}
	r.cfg.Log.Debug("settled pod", "pod", s.Pod.Namespace+"/"+s.Pod.Name, "reason", reason, "completed", IsCompleted(updated))
	return updated, nil
}

// PodAdded is the pod cache's add handler: a pod that departed holding the finalizer (Departed) and had
// its label set back is in the cache again.
func (r *Releaser) PodAdded(obj any) {
	if pod, ok := podOf(obj); ok {
		r.departed.drop(pod)
	}
}

// PodUpdated is the pod cache's update handler: it drops the expectation once the cache shows the pod
// without our finalizer. Objects other than pods are ignored.
func (r *Releaser) PodUpdated(obj any) {
	if pod, ok := podOf(obj); ok {
		r.expectations.Observed(pod)
		r.departed.drop(pod)
	}
}

// PodDeleted is the pod cache's delete handler: a pod that is gone needs no expectation. A pod that left
// the cache still holding the finalizer, not by our own patch, is kept aside (Departed) so its release is
// not lost, and its workflow is looked at. Our own settling patch may reach the cache before its
// expectation is recorded: the pod is then kept aside until that same pass drops it, which it does before
// any other pass of the workflow can run. It reports whether the pod left because of our own settling
// patch: the pass that patched it had already persisted everything the pod decides, so its workflow needs
// no pass for the departure.
func (r *Releaser) PodDeleted(obj any) (ownSettle bool) {
	pod, ok := podOf(obj)
	if !ok {
		return false
	}
	if r.expectations.Forget(pod.UID) {
		return true
	}
	r.departed.left(pod)
	return false
}

// IsDeparted reports whether pod is a copy kept aside after it left the cache holding the finalizer.
func (r *Releaser) IsDeparted(pod *corev1.Pod) bool { return r.departed.has(pod) }

// ForgetDeparted drops a departed pod that is gone or was replaced.
func (r *Releaser) ForgetDeparted(pod *corev1.Pod) { r.departed.drop(pod) }

// Departed returns the pods of the workflow with uid that left the pod cache still holding the finalizer
// (someone else labelled them completed): the controller's pass looks at them with the cached ones.
func (r *Releaser) Departed(uid string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range r.departed.byIndex(r.cfg.PodsByWorkflowUID, uid) {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

func podOf(obj any) (*corev1.Pod, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	return pod, ok
}
