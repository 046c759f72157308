package podgc

import (
	"context"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/internal/fanout"
	"github.com/wfguard/wfguard/internal/resourceversion"
	"github.com/wfguard/wfguard/podidentity"
)

// Collector deletes the pods a persisted workflow's podGC asks for.
type Collector struct {
	kube    kubernetes.Interface
	clock   clock.PassiveClock
	metrics *metrics
	// Settings are the controller ConfigMap's podGC settings in force; nil: none.
	Settings func() Settings
	looks    looks
}

// Settings are the controller ConfigMap's podGC settings.
type Settings struct {
	// DeleteDelay applies to workflows whose podGC sets no deleteDelayDuration (podGCDeleteDelayDuration);
	// nil deletes at once.
	DeleteDelay *time.Duration
	// GracePeriodSeconds is the deletion's grace period (podGCGracePeriodSeconds); nil is the pod's own.
	GracePeriodSeconds *int64
}

func (c *Collector) settings() Settings {
	if c.Settings == nil {
		return Settings{}
	}
	return c.Settings()
}

// NewCollector builds a Collector and registers wfguard_podgc_deleted_total on reg.
func NewCollector(kube kubernetes.Interface, clk clock.PassiveClock, reg prometheus.Registerer) (*Collector, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Collector{kube: kube, clock: clk, metrics: m}, nil
}

// CallParallelism bounds podGC's concurrent deletions (and delay marks) within one pass: a workflow's
// thousand due pods need not wait on each other's round trips. The client's QPS bounds the rate.
const CallParallelism = 16

// Collect applies podGC to the persisted workflow's pods: a delay is first recorded on the pod
// (durable across restarts), then the pod is deleted when due. It returns when to look again. pods are the
// cached pods and those the pass just settled; a pod settled in an earlier pass was labelled completed and
// left the cache, so when such a pod may be due (lookDue) the workflow's completed pods are read from the
// API server.
func (c *Collector) Collect(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) (time.Duration, error) {
	if gc := inForce(wf); gc == nil || gc.GetStrategy() == wfv1.PodGCOnPodNone {
		return 0, nil
	}
	now := c.clock.Now()
	settings := c.settings()
	looked := c.looks.due(wf, now)
	if looked {
		completed, err := c.completedPods(ctx, wf)
		if err != nil {
			return 0, err
		}
		pods = merged(pods, completed)
	}
	decisions, err := PodsToDelete(wf, pods, now, settings.DeleteDelay)
	if err != nil {
		return 0, nil // a bad podGC spec was reported at validation; nothing to collect
	}
	var marks, due []GCDecision
	var pending []time.Time // deletions left for later, of pods that may have left the cache
	for _, d := range decisions {
		switch {
		case d.Mark:
			marks = append(marks, d)
		case now.Before(d.At):
			pending = append(pending, d.At)
		default:
			due = append(due, d)
		}
	}
	marked, markErr := c.markAll(ctx, marks)
	err = errors.Join(markErr, c.deleteAll(ctx, due, settings.GracePeriodSeconds))
	pending = append(pending, marked...)
	var next time.Duration
	for _, at := range pending {
		next = sooner(next, at.Sub(now))
	}
	// A pass may come early (its clock is truncated, or an event brought it): ask again for the next look.
	if at := c.looks.record(wf, now, looked, pending, err != nil); !at.IsZero() && at.After(now) {
		next = sooner(next, at.Sub(now))
	}
	return next, err
}

// sooner is the sooner of two requeues, 0 being none.
func sooner(next, d time.Duration) time.Duration {
	if next == 0 || d < next {
		return d
	}
	return next
}

// markAll records on each pod when podGC deletes it, and returns the times recorded.
func (c *Collector) markAll(ctx context.Context, marks []GCDecision) ([]time.Time, error) {
	errs := fanout.Each(ctx, CallParallelism, len(marks), func(i int) error {
		d := marks[i]
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationDeleteAfter, d.At.UTC().Format(time.RFC3339))
		_, err := c.kube.CoreV1().Pods(d.Pod.Namespace).Patch(ctx, d.Pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("recording the podGC deletion time on pod %s/%s: %w", d.Pod.Namespace, d.Pod.Name, err)
		}
		return nil
	})
	var marked []time.Time
	for i, err := range errs {
		if err == nil {
			marked = append(marked, marks[i].At)
		}
	}
	return marked, errors.Join(errs...)
}

// deleteAll deletes the due pods, each only if it is still the pod decided about (its UID).
func (c *Collector) deleteAll(ctx context.Context, due []GCDecision, grace *int64) error {
	return errors.Join(fanout.Each(ctx, CallParallelism, len(due), func(i int) error {
		d := due[i]
		err := c.kube.CoreV1().Pods(d.Pod.Namespace).Delete(ctx, d.Pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.Pod.UID}, GracePeriodSeconds: grace})
		switch {
		case err == nil:
			c.metrics.deleted.Inc()
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return fmt.Errorf("deleting pod %s/%s for podGC: %w", d.Pod.Namespace, d.Pod.Name, err)
		}
		return nil
	})...)
}

// Forget drops what the collector remembers of a deleted workflow.
func (c *Collector) Forget(uid types.UID) { c.looks.forget(uid) }

// completedPageSize bounds one read of a workflow's completed pods.
const completedPageSize = 500

// completedPods reads from the API server the workflow's pods labelled completed (out of the cache), in
// pages, keeping only those the controller created for a node of this workflow (podidentity), by node ID.
func (c *Collector) completedPods(ctx context.Context, wf *wfv1.Workflow) (map[string]*corev1.Pod, error) {
	selector := labels.Set{common.LabelKeyWorkflow: wf.Name, common.LabelKeyCompleted: "true"}.String()
	owner := podidentity.OwnerOf(wf)
	out := map[string]*corev1.Pod{}
	// A consistent read (no resourceVersion; the API server serves it from its watch cache once that has
	// caught up with etcd): "any version" (0) may predate our own label patch of an earlier pass, and miss
	// that pod until its sibling's deletion is already due (seen under load).
	opts := metav1.ListOptions{LabelSelector: selector, Limit: completedPageSize}
	for {
		list, err := c.kube.CoreV1().Pods(wf.Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the completed pods of workflow %s/%s for podGC: %w", wf.Namespace, wf.Name, err)
		}
		c.metrics.completedReads.Inc()
		for i := range list.Items {
			pod := &list.Items[i]
			id := pod.Annotations[common.AnnotationKeyNodeID]
			node, ok := wf.Status.Nodes[id]
			if !ok || podidentity.Check(owner, &node, pod) != podidentity.Match {
				continue
			}
			out[id] = pod
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// merged is pods plus the completed pods read from the API server, the newer copy (by resourceVersion)
// where both have a node's pod: a cached copy may predate the pod's departure from the cache (its last
// write: our release, which the read shows).
func merged(pods, completed map[string]*corev1.Pod) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(pods)+len(completed))
	for id, pod := range completed {
		out[id] = pod
	}
	for id, pod := range pods {
		if read, ok := out[id]; ok && read.UID == pod.UID && resourceversion.Compare(read.ResourceVersion, pod.ResourceVersion) > 0 {
			continue
		}
		out[id] = pod
	}
	return out
}
