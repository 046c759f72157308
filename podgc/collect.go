package podgc

import (
	"context"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Collector deletes the pods a persisted workflow's podGC asks for.
type Collector struct {
	kube    kubernetes.Interface
	clock   clock.PassiveClock
	metrics *metrics
	// Settings are the controller ConfigMap's podGC settings in force; nil: none.
	Settings func() Settings
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

// Collect applies podGC to the persisted workflow's pods: a delay is first recorded on the pod
// (durable across restarts), then the pod is deleted when due. It returns when to look again.
func (c *Collector) Collect(ctx context.Context, wf *wfv1.Workflow, pods map[string]*corev1.Pod) (time.Duration, error) {
	now := c.clock.Now()
	settings := c.settings()
	decisions, err := PodsToDelete(wf, pods, now, settings.DeleteDelay)
	if err != nil {
		return 0, nil // a bad podGC spec was reported at validation; nothing to collect
	}
	var next time.Duration
	requeue := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	var errs []error
	for _, d := range decisions {
		switch {
		case d.Mark:
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationDeleteAfter, d.At.UTC().Format(time.RFC3339))
			if _, err := c.kube.CoreV1().Pods(d.Pod.Namespace).Patch(ctx, d.Pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("recording the podGC deletion time on pod %s/%s: %w", d.Pod.Namespace, d.Pod.Name, err))
				continue
			}
			requeue(d.At.Sub(now))
		case now.Before(d.At):
			requeue(d.At.Sub(now))
		default:
			err := c.kube.CoreV1().Pods(d.Pod.Namespace).Delete(ctx, d.Pod.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &d.Pod.UID}, GracePeriodSeconds: settings.GracePeriodSeconds})
			switch {
			case err == nil:
				c.metrics.deleted.Inc()
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				errs = append(errs, fmt.Errorf("deleting pod %s/%s for podGC: %w", d.Pod.Namespace, d.Pod.Name, err))
			}
		}
	}
	return next, errors.Join(errs...)
}
