package cronworkflow

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a due run (label outcome of wfguard_cronworkflow_runs_total).
const (
	outcomeCreated         = "created"
	outcomeAlreadyExists   = "already_exists"
	outcomeForbidden       = "forbidden"
	outcomeSuspended       = "suspended"
	outcomeWhenFalse       = "when_false"
	outcomeStopped         = "stopped"
	outcomeSubmissionError = "submission_error"
	outcomeSpecError       = "spec_error"
)

type metrics struct {
	runs       *prometheus.CounterVec
	terminated prometheus.Counter
	pruned     prometheus.Counter
	ignored    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_cronworkflow_runs_total",
			Help: "Scheduled CronWorkflow runs that came due, by what became of them."}, []string{"outcome"}),
		terminated: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_cronworkflow_runs_terminated_total",
			Help: "Active runs terminated by concurrencyPolicy Replace."}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_cronworkflow_runs_pruned_total",
			Help: "Completed runs deleted by successfulJobsHistoryLimit / failedJobsHistoryLimit."}),
		ignored: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_cronworkflow_runs_ignored_total",
			Help: "Workflows naming a CronWorkflow as their controller that the reconciler did not create, ignored."}),
	}
	if err := errors.Join(reg.Register(m.runs), reg.Register(m.terminated), reg.Register(m.pruned), reg.Register(m.ignored)); err != nil {
		return nil, fmt.Errorf("registering cronworkflow metrics: %w", err)
	}
	for _, o := range []string{outcomeCreated, outcomeAlreadyExists, outcomeForbidden, outcomeSuspended, outcomeWhenFalse,
		outcomeStopped, outcomeSubmissionError, outcomeSpecError} {
		m.runs.WithLabelValues(o)
	}
	return m, nil
}
