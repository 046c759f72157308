package controllerconfig

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the result label of wfguard_controller_config_loads_total.
const (
	resultValid   = "valid"
	resultInvalid = "invalid"
	resultDeleted = "deleted"
)

type metrics struct {
	loads       *prometheus.CounterVec
	unsupported prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wfguard_controller_config_loads_total",
			Help: "Versions of the controller ConfigMap read, by result: valid (now in force), invalid (the last valid config stays), deleted (defaults in force)."},
			[]string{"result"}),
		unsupported: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wfguard_controller_config_unsupported_keys",
			Help: "Keys (top-level, and settings under honoured keys) set in the controller config in force that wfguard does not apply."}),
	}
	for _, c := range []prometheus.Collector{m.loads, m.unsupported} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controllerconfig metrics: %w", err)
		}
	}
	return m, nil
}
