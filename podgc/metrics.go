package podgc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deleted prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_podgc_deleted_total",
			Help: "Pods deleted by the workflow's podGC strategy (after their capture was persisted and released)."}),
	}
	if err := reg.Register(m.deleted); err != nil {
		return nil, fmt.Errorf("registering podgc metrics: %w", err)
	}
	return m, nil
}
