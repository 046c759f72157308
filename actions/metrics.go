package actions

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// actionUnknown is the action label of every spec.action that is not one of the five.
const actionUnknown = "Unknown"

// Metrics are the action seam's counters (docs/metrics.md).
type Metrics struct {
	outcomes       *prometheus.CounterVec
	expired        prometheus.Counter
	recordsIgnored prometheus.Counter
}

// NewMetrics registers the action metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_workflow_actions_total",
			Help: "WorkflowActions given their outcome, by action (Suspend, Resume, Stop, Terminate, Retry, Unknown), phase and reason."},
			[]string{"action", "phase", "reason"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_workflow_actions_expired_total",
			Help: "Terminal WorkflowActions deleted after their TTL."}),
		recordsIgnored: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_action_records_ignored_total",
			Help: "Write-ahead action records in a workflow's status or annotation mirror that the controller did not write (no valid seal), ignored."}),
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.expired, m.recordsIgnored} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering action metrics: %w", err)
		}
	}
	return m, nil
}

// actionLabel bounds the metric's cardinality: unknown action values share one label.
func actionLabel(action string) string {
	switch action {
	case v1alpha1.ActionSuspend, v1alpha1.ActionResume, v1alpha1.ActionStop, v1alpha1.ActionTerminate, v1alpha1.ActionRetry:
		return action
	}
	return actionUnknown
}
