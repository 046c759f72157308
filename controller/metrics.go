package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/extstatus"
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
	// phaseDuration times each phase of a pass, by its name (the Phase* constants).
	phaseDuration *prometheus.HistogramVec
	persists      *prometheus.CounterVec
	staleSkips    prometheus.Counter
	ownCopyPasses prometheus.Counter
	passesSkipped prometheus.Counter
	podsCreated   prometheus.Counter
	podsStopped   prometheus.Counter
	completed     *prometheus.CounterVec
	ignoredPods   *prometheus.CounterVec
	// compressedReads counts reads of status.compressedNodes by the controller's Inflater, by outcome (the
	// extstatus.Inflate* constants); inflatedBytes what they decompressed.
	compressedReads *prometheus.CounterVec
	inflatedBytes   prometheus.Counter
	// nodesRefused counts workflow versions whose nodes were refused, by reason (extstatus.InflateOverRatio,
	// InflateOverSize, InflateSizeMismatch, InflateOverDecodedSize).
	nodesRefused *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_reconcile_total",
			Help: "Reconcile passes by result (success, error, panic, deadline_exceeded)."}, []string{"result"}),
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wfguard_reconcile_duration_seconds",
			Help: "Duration of one reconcile pass.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wfguard_phase_duration_seconds",
			Help:    "Duration of one phase of a pass, by phase (retry_cleanup, drain_actions, find_missing_pods, merge_task_results, assess_pods, execute, apply_retry, persist, after_persist, effects).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"phase"}),
		persists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflow_persist_total",
			Help: "Workflow writes by outcome (updated, conflict, reapplied, refused, deferred, unstorable: the status could never be stored and the workflow was ended Error)."}, []string{"outcome"}),
		staleSkips: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_stale_cache_skips_total",
			Help: "Cache copies skipped because they were older than our last write and that write's stored object was no longer held."}),
		ownCopyPasses: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_passes_from_own_write_total",
			Help: "Passes that started from the object our last write stored, because the cache copy was older (the informer had not delivered that write yet)."}),
		passesSkipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_passes_skipped_total",
			Help: "Workflow keys handed out by the queue that ran no pass: nothing changed since their last pass began, and no pass asked to run by then (a delayed entry outlived its reason)."}),
		podsCreated: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pods_created_total",
			Help: "Pods created for workflow nodes."}),
		podsStopped: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_pods_stopped_total",
			Help: "Pods stopped for shutdown or deadline."}),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflows_completed_total",
			Help: "Workflows completed, by phase."}, []string{"phase"}),
		ignoredPods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_pods_ignored_total",
			Help: "Pods that claim a workflow but are not the pod the controller created for the node they name; they decide nothing and keep their finalizer. By reason (podidentity: other_namespace, other_owner, other_workflow_label, no_node_id, other_node, unexpected_name); counted once per pod."}, []string{"reason"}),
		compressedReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_compressed_nodes_reads_total",
			Help: "Reads of a workflow's status.compressedNodes no cached decoding answered, by outcome: inflated, over_ratio, over_size (refused by the size the gzip trailer states, nothing inflated), size_mismatch (refused one byte past the size the trailer states), over_decoded_size (inflated, refused before decoding: the JSON would decode to more than a workflow may take), corrupt, failed_before (the same bytes failed before: refused unread), budget_full (no room in the inflate budget in time: the pass is retried)."}, []string{"outcome"}),
		inflatedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_compressed_nodes_inflated_bytes_total",
			Help: "Bytes decompressed reading status.compressedNodes, whatever the outcome."}),
		nodesRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflow_nodes_refused_total",
			Help: "Workflow versions (UID and resourceVersion) whose nodes were refused, counted once each with the WorkflowNodesRefused Event, by reason (over_ratio, over_size, size_mismatch: status.compressedNodes; over_decoded_size: compressed or plain nodes that would decode to more than a workflow may take)."}, []string{"reason"}),
	}
	for _, name := range phaseNames {
		m.phaseDuration.WithLabelValues(name)
	}
	for _, c := range []prometheus.Collector{m.reconciles, m.reconcileDuration, m.phaseDuration, m.persists, m.staleSkips, m.ownCopyPasses, m.passesSkipped, m.podsCreated, m.podsStopped, m.completed,
		m.ignoredPods, m.compressedReads, m.inflatedBytes, m.nodesRefused} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	return m, nil
}

// observeInflation is the controller's Inflater's observer.
func (m *metrics) observeInflation(i extstatus.Inflation) {
	m.compressedReads.WithLabelValues(i.Outcome).Inc()
	m.inflatedBytes.Add(float64(i.Inflated))
}

// registerCachedPods registers wfguard_pods_cached, the size of the pod cache, read at each scrape: it
// follows running work, as completed pods leave the cache.
func registerCachedPods(reg prometheus.Registerer, pods cache.Store) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wfguard_pods_cached",
		Help: "Pods in the controller's pod cache: those of its instance not labelled workflows.argoproj.io/completed=true."},
		func() float64 { return float64(len(pods.ListKeys())) })
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("registering wfguard_pods_cached: %w", err)
	}
	return nil
}
