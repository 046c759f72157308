package argometrics

import (
	"k8s.io/client-go/util/workqueue"
)

// WorkflowQueue is the name argo gives its workflow queue (the queue_name and worker_type label value);
// the controller names its queue so.
const WorkflowQueue = "workflow_queue"

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
