package argometrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// WorkflowQueue is the name argo gives its workflow queue (the queue_name and worker_type label value);
// the controller names its queue so.
const WorkflowQueue = "workflow_queue"

// queueMetrics are argo's queue_* and workers_busy_count metrics, fed by client-go's workqueue.
type queueMetrics struct {
	depth, unfinished, longest, busy *prometheus.GaugeVec
	adds, retries                    *prometheus.CounterVec
	latency, duration                *prometheus.HistogramVec
}

func newQueueMetrics() *queueMetrics {
	gauge := func(name, help, label string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + name, Help: help}, []string{label})
	}
	return &queueMetrics{
		depth:      gauge("queue_depth_gauge", "A gauge of the current depth of the queues.", "queue_name"),
		unfinished: gauge("queue_unfinished_work", "A gauge of the number of queue items that have not been processed yet.", "queue_name"),
		longest: gauge("queue_longest_running",
			"A gauge of the number of seconds that this queue's longest running processor has been running for.", "queue_name"),
		busy:     gauge("workers_busy_count", "A gauge of queue workers that are busy.", "worker_type"),
		adds:     counterVec("queue_adds_count", "A counter of additions to the work queues inside the controller.", "queue_name"),
		retries:  counterVec("queue_retries", "A counter of the number of times a message has been retried in the queue.", "queue_name"),
		latency:  histogramVec("queue_latency", "A histogram of the time events in the queues are taking before they are processed.", queueLatencyBuckets, "queue_name"),
		duration: histogramVec("queue_duration", "A histogram of the time events in the queues are taking to be processed.", requestBuckets, "queue_name"),
	}
}

func (q *queueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.depth, q.unfinished, q.longest, q.busy, q.adds, q.retries, q.latency, q.duration}
}

// QueueMetrics is the workqueue.MetricsProvider of the queues argo's metrics measure.
func (m *Metrics) QueueMetrics() workqueue.MetricsProvider { return m.queue }

// WorkerBusy counts a worker of the named queue that took an item; WorkerFree, one that is done with it.
func (m *Metrics) WorkerBusy(queue string) { m.queue.busy.WithLabelValues(queue).Inc() }

// WorkerFree counts a worker of the named queue that is done with its item.
func (m *Metrics) WorkerFree(queue string) { m.queue.busy.WithLabelValues(queue).Dec() }

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	q.busy.WithLabelValues(name) // a queue's workers show as 0 busy from the start, as argo's do
	return q.depth.WithLabelValues(name)
}

func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.duration.WithLabelValues(name)
}

func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}

func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
