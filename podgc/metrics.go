package podgc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deleted        prometheus.Counter
	completedReads prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_podgc_deleted_total",
			Help: "Pods deleted by the workflow's podGC strategy (after their capture was persisted and released)."}),
		completedReads: prometheus.NewCounter(prometheus.CounterOpts{Name: "wfguard_podgc_completed_pod_reads_total",
			Help: "Pages of a workflow's completed pods (out of the pod cache) read from the API server because one of them may be due for podGC."}),
	}
	for _, c := range []prometheus.Collector{m.deleted, m.completedReads} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering podgc metrics: %w", err)
		}
	}
	return m, nil
}
