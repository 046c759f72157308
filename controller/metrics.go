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

	directReadComplete   = "complete"
	directReadIncomplete = "incomplete"
	directReadNotFound   = "not_found"
	directReadError      = "error"
	directReadOverBudget = "over_budget"
	directReadForeign    = "foreign_owner"
)

type metrics struct {
	reconciles        *prometheus.CounterVec
	reconcileDuration prometheus.Histogram
	persists          *prometheus.CounterVec
	staleSkips        prometheus.Counter
	podsCreated       prometheus.Counter
	podsStopped       prometheus.Counter
	completed         *prometheus.CounterVec
	actions           *prometheus.CounterVec
	actionsExpired    prometheus.Counter
	directReads       *prometheus.CounterVec
	ignoredResults    *prometheus.CounterVec
	ignoredPods       *prometheus.CounterVec
	resultWait        prometheus.Histogram
	resultTimeouts    prometheus.Counter
	waitingNodes      prometheus.Gauge
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
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflow_actions_total",
			Help: "WorkflowActions given their outcome, by action (Suspend, Resume, Stop, Terminate, Unknown), phase and reason."},
			[]string{"action", "phase", "reason"}),
		actionsExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_workflow_actions_expired_total",
			Help: "Terminal WorkflowActions deleted after their TTL."}),
		directReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_taskresult_direct_reads_total",
			Help: "Task results read past the cache from the API server, by outcome (complete, incomplete, not_found, error, over_budget)."}, []string{"outcome"}),
		ignoredResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_taskresult_ignored_total",
			Help: "Task results not merged, by reason (foreign_owner, unknown_node, not_a_pod_node, no_matching_pod, predates_pod); counted per pass."}, []string{"reason"}),
		ignoredPods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_pods_ignored_total",
			Help: "Pods that claim a workflow but are not the pod the controller created for the node they name; they decide nothing and keep their finalizer. By reason (podidentity: other_namespace, other_owner, other_workflow_label, no_node_id, other_node, unexpected_name); counted once per pod."}, []string{"reason"}),
		resultWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wfguard_taskresult_wait_seconds",
			Help:    "Time a node waited for its task result after its pod ended, until the gate opened (complete or timed out).",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}),
		resultTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_taskresult_timeouts_total",
			Help: "Nodes whose task result did not complete within the timeout (node Error TaskResultTimeout)."}),
		waitingNodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wfguard_taskresult_waiting_nodes",
			Help: "Nodes whose pod ended and that wait for their task result now."}),
	}
	for _, c := range []prometheus.Collector{m.reconciles, m.reconcileDuration, m.persists, m.staleSkips, m.podsCreated, m.podsStopped, m.completed, m.actions, m.actionsExpired,
		m.directReads, m.ignoredResults, m.ignoredPods, m.resultWait, m.resultTimeouts, m.waitingNodes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	return m, nil
}
