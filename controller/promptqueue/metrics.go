package promptqueue

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Classes of a queued key (label class of wfguard_queue_wait_seconds).
const (
	classPrompt   = "prompt"
	classDeferred = "deferred"
)

// Metrics are the queue's own metrics (docs/metrics.md); client-go's queue metrics come through the
// MetricsProvider.
type Metrics struct {
	wait *prometheus.HistogramVec
}

// NewMetrics registers the queue's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wfguard_queue_wait_seconds",
			Help:    "Time a workflow key waited in the queue for a worker, by class (prompt: added for a change; deferred: a delayed requeue or retry).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"class"}),
	}
	if err := reg.Register(m.wait); err != nil {
		return nil, fmt.Errorf("registering queue metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) observeWait(class string, d time.Duration) {
	if m == nil {
		return
	}
	m.wait.WithLabelValues(class).Observe(d.Seconds())
}
