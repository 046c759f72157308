package podfinalizer

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values of wfguard_pod_finalizers_released_total{reason}: why a pod's finalizer could go.
const (
	releasePersisted = "persisted"
	releaseOrphaned  = "orphaned"
	releaseDeleting  = "deleting"
	releaseDisabled  = "disabled"
)

// ageBuckets are the values of wfguard_pods_holding_finalizer{age}: a pod's age since creation, bucketed.
var ageBuckets = []struct {
	max   time.Duration
	label string
}{{time.Minute, "lt_1m"}, {10 * time.Minute, "lt_10m"}, {time.Hour, "lt_1h"}, {1<<63 - 1, "ge_1h"}}

func ageBucket(age time.Duration) string {
	for _, b := range ageBuckets {
		if age < b.max {
			return b.label
		}
	}
	return ageBuckets[len(ageBuckets)-1].label
}

type metrics struct {
	finalizersReleased    *prometheus.CounterVec
	releasedBeforePersist prometheus.Counter
	releaseErrors         prometheus.Counter
	heldPods              *prometheus.GaugeVec
	releaseLatency        prometheus.Histogram
	labelledCompleted     prometheus.Counter
	completedRestored     prometheus.Counter
	departedReleased      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		finalizersReleased: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_pod_finalizers_released_total",
			Help: "Status finalizers removed from pods, by reason (persisted: the node's final state is stored; deleting: the pod is being deleted; disabled: --pod-status-finalizer=false but the pod carried it; orphaned: the workflow is gone)."},
			[]string{"reason"}),
		releasedBeforePersist: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_finalizer_released_before_persist_total",
			Help: "Finalizers released while the persisted workflow did not yet record the pod's node as final. Must stay 0."}),
		releaseErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pod_finalizer_release_errors_total",
			Help: "Failed attempts to remove the status finalizer (retried with backoff)."}),
		heldPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "wfguard_pods_holding_finalizer",
			Help: "Pods holding the status finalizer, by age bucket (lt_1m, lt_10m, lt_1h, ge_1h); refreshed each orphan sweep."},
			[]string{"age"}),
		releaseLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wfguard_pod_finalizer_release_latency_seconds",
			Help: "Time from a node's finish to the release of its pod's status finalizer.", Buckets: prometheus.ExponentialBuckets(0.25, 2, 12)}),
		labelledCompleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pods_labelled_completed_total",
			Help: "Pods labelled workflows.argoproj.io/completed=true once their node's final state was persisted (or their workflow was gone); the label takes them out of the controller's pod cache."}),
		completedRestored: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pod_completed_label_restored_total",
			Help: "Pods found labelled workflows.argoproj.io/completed=true, which takes them out of the pod cache, while their node was not final; the controller set the label back to false."}),
		departedReleased: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_departed_pod_finalizers_released_total",
			Help: "Status finalizers released from pods that had left the controller's pod cache holding them (someone else changed a label the cache selects on: labelled the pod completed, or removed its workflow label)."}),
	}
	for _, c := range []prometheus.Collector{m.finalizersReleased, m.releasedBeforePersist, m.releaseErrors, m.heldPods, m.releaseLatency, m.labelledCompleted, m.completedRestored, m.departedReleased} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering pod finalizer metrics: %w", err)
		}
	}
	return m, nil
}
