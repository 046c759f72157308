package taskresult

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a read past the cache (label outcome of wfguard_taskresult_direct_reads_total).
const (
	directReadComplete   = "complete"
	directReadIncomplete = "incomplete"
	directReadNotFound   = "not_found"
	directReadError      = "error"
	directReadOverBudget = "over_budget"
	directReadForeign    = "foreign_owner"
)

// Metrics are the task-result gate's metrics (docs/metrics.md).
type Metrics struct {
	directReads    *prometheus.CounterVec
	ignoredResults *prometheus.CounterVec
	resultWait     prometheus.Histogram
	resultTimeouts prometheus.Counter
	waitingNodes   prometheus.Gauge
}

// NewMetrics registers the gate's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		directReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_taskresult_direct_reads_total",
			Help: "Task results read past the cache from the API server, by outcome (complete, incomplete, not_found, error, over_budget)."}, []string{"outcome"}),
		ignoredResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_taskresult_ignored_total",
			Help: "Task results not merged, by reason (foreign_owner, unknown_node, not_a_pod_node, no_matching_pod, predates_pod, other_pod, other_account); counted per pass."}, []string{"reason"}),
		resultWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wfguard_taskresult_wait_seconds",
			Help:    "Time a node waited for its task result after its pod ended, until the gate opened (complete or timed out).",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}),
		resultTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_taskresult_timeouts_total",
			Help: "Nodes whose task result did not complete within the timeout (node Error TaskResultTimeout)."}),
		waitingNodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wfguard_taskresult_waiting_nodes",
			Help: "Nodes whose pod ended and that wait for their task result now."}),
	}
	for _, c := range []prometheus.Collector{m.directReads, m.ignoredResults, m.resultWait, m.resultTimeouts, m.waitingNodes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering task-result metrics: %w", err)
		}
	}
	return m, nil
}
