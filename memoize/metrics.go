package memoize

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the memoization cache's counters (docs/metrics.md). A nil *Metrics counts nothing.
type Metrics struct {
	entriesIgnored *prometheus.CounterVec
}

// NewMetrics registers the memoization metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		entriesIgnored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_memoization_entries_ignored_total",
			Help: "Memoization cache entries that would have decided a node's outputs but were not saved by the controller (--memoize-trust=sealed), ignored: the node ran. By reason (unsealed, invalid_seal); counted once per workflow and entry."},
			[]string{"reason"}),
	}
	if err := reg.Register(m.entriesIgnored); err != nil {
		return nil, fmt.Errorf("registering memoization metrics: %w", err)
	}
	return m, nil
}

// EntryIgnored counts one ignored entry by why (IgnoredUnsealed, IgnoredInvalidSeal).
func (m *Metrics) EntryIgnored(why string) {
	if m != nil {
		m.entriesIgnored.WithLabelValues(why).Inc()
	}
}
