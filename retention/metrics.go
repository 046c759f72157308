package retention

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deleted *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_retention_deleted_total",
		Help: "Completed workflows deleted beyond the controller ConfigMap's retentionPolicy, by phase (Succeeded, Failed, Error)."},
		[]string{"phase"})}
	if err := reg.Register(m.deleted); err != nil {
		return nil, fmt.Errorf("registering retention metrics: %w", err)
	}
	return m, nil
}
