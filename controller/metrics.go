package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values.
const (
	resultSuccess  = "success"
	resultError    = "error"
	resultPanic    = "panic"
	resultDeadline = "deadline_exceeded"

	persistUpdated    = "updated"
	persistConflict   = "conflict"
	persistReapplied  = "reapplied"
	persistRefused    = "refused"
	persistDeferred   = "deferred"
	persistUnstorable = "unstorable"
)

type metrics struct {
	reconciles        *prometheus.CounterVec
	reconcileDuration prometheus.Histogram
	persists          *prometheus.CounterVec
	staleSkips        prometheus.Counter
	podsCreated       prometheus.Counter
	podsStopped       prometheus.Counter
	completed         *prometheus.CounterVec
	ignoredPods       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_reconcile_total",
			Help: "Reconcile passes by result (success, error, panic, deadline_exceeded)."}, []string{"result"}),
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wfguard_reconcile_duration_seconds",
			Help: "Duration of one reconcile pass.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		persists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflow_persist_total",
			Help: "Workflow writes by outcome (updated, conflict, reapplied, refused, deferred, unstorable: the status could never be stored and the workflow was ended Error)."}, []string{"outcome"}),
		staleSkips: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_stale_cache_skips_total",
			Help: "Cache copies skipped because they were older than our last write."}),
		podsCreated: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pods_created_total",
			Help: "Pods created for workflow nodes."}),
		podsStopped: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pods_stopped_total",
			Help: "Pods stopped for shutdown or deadline."}),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflows_completed_total",
			Help: "Workflows completed, by phase."}, []string{"phase"}),
		ignoredPods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_pods_ignored_total",
			Help: "Pods that claim a workflow but are not the pod the controller created for the node they name; they decide nothing and keep their finalizer. By reason (podidentity: other_namespace, other_owner, other_workflow_label, no_node_id, other_node, unexpected_name); counted once per pod."}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.reconciles, m.reconcileDuration, m.persists, m.staleSkips, m.podsCreated, m.podsStopped, m.completed,
		m.ignoredPods} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	return m, nil
}
