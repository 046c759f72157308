package argometrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values argo uses.
const (
	causeOperationPanic   = "OperationPanic"
	causeCronSubmission   = "CronWorkflowSubmissionError"
	causeCronSpec         = "CronWorkflowSpecError"
	prefix                = "argo_workflows_"
	levelInfo, levelWarn  = "info", "warning" // logrus' level names, as argo's log counter has them
	levelError            = "error"
	recentlyStartedFalse  = "false"
	pendingPodInitialized = "PodInitializing"
	podRunningCondition   = "PodRunning"
)

// Buckets argo v3.7 declares (operation_duration_seconds: MAX_OPERATION_TIME 30s over 6 linear buckets;
// workflowtemplate_runtime declares none, so OpenTelemetry's defaults apply).
var (
	requestBuckets         = []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60, 180}
	queueLatencyBuckets    = []float64{1, 5, 20, 60, 180}
	operationBuckets       = prometheus.LinearBuckets(5, 5, 6)
	templateRuntimeBuckets = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}
	workflowPhases         = []string{"Pending", "Running", "Succeeded", "Failed", "Error"}
	podPhases              = []string{"Pending", "Running"}
	logLevels              = []string{levelInfo, levelWarn, levelError}
	errorCauses            = []string{causeOperationPanic, causeCronSubmission, causeCronSpec}
	conditionStatuses      = []string{"False", "True"}
)

// BuildInfo labels argo_workflows_version.
type BuildInfo struct {
	Version, Platform, GoVersion, BuildDate, Compiler, GitCommit, GitTreeState, GitTag string
}

// Counts returns how many objects are in each phase now (read at each scrape).
type Counts func() map[string]int

// Metrics holds argo's controller metrics; its methods are what the controller, the cron reconciler, the
// leader election and the API client report to.
type Metrics struct {
	cronPolicy       *prometheus.CounterVec
	cronTriggered    *prometheus.CounterVec
	errors           *prometheus.CounterVec
	deprecated       *prometheus.CounterVec
	leader           prometheus.Gauge
	requestDuration  *prometheus.HistogramVec
	requests         *prometheus.CounterVec
	logs             *prometheus.CounterVec
	operations       prometheus.Histogram
	podMissing       *prometheus.CounterVec
	podPending       *prometheus.CounterVec
	podsEntered      *prometheus.CounterVec
	workflowsEntered *prometheus.CounterVec
	templateRuns     *prometheus.CounterVec
	templateRuntime  *prometheus.HistogramVec
	queue            *queueMetrics
	phases           *phaseGauges
}

// New registers argo's metrics in reg.
func New(reg prometheus.Registerer, build BuildInfo) (*Metrics, error) {
	m := &Metrics{
		cronPolicy: counterVec("cronworkflows_concurrencypolicy_triggered",
			"A counter of the number of times a CronWorkflow has triggered its concurrencyPolicy to limit the number of workflows running.",
			"name", "namespace", "concurrency_policy"),
		cronTriggered: counterVec("cronworkflows_triggered_total",
			"A counter of the total number of times a CronWorkflow has been triggered.", "name", "namespace"),
		errors:     counterVec("error_count", "A counter of certain errors incurred by the controller by cause.", "cause"),
		deprecated: counterVec("deprecated_feature", "Incidents of deprecated feature being used.", "feature", "namespace"),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "is_leader",
			Help: "Emits 1 if leader, 0 otherwise. Always 1 if leader election is disabled."}),
		requestDuration: histogramVec("k8s_request_duration", "A histogram recording the API requests sent to the Kubernetes API.",
			requestBuckets, "kind", "verb", "status_code"),
		requests: counterVec("k8s_request_total", "A counter of the number of API requests sent to the Kubernetes API.",
			"kind", "verb", "status_code"),
		logs: counterVec("log_messages", "A count of log messages emitted by the controller by log level.", "level"),
		operations: prometheus.NewHistogram(prometheus.HistogramOpts{Name: prefix + "operation_duration_seconds",
			Help: "A histogram of durations of operations.", Buckets: operationBuckets}),
		podMissing:  counterVec("pod_missing", "Incidents of pod missing.", "node_phase", "recently_started"),
		podPending:  counterVec("pod_pending_count", "Total number of pods that started pending by reason.", "reason", "namespace"),
		podsEntered: counterVec("pods_total_count", "Total number of pods that have entered each phase.", "phase", "namespace"),
		workflowsEntered: counterVec("total_count",
			"A counter of workflows that have entered each phase for tracking them through their life-cycle, by namespace.", "phase", "namespace"),
		templateRuns: counterVec("workflowtemplate_triggered_total",
			"A counter of workflows using workflowTemplateRef only, as they enter each phase.", "name", "namespace", "cluster_scope", "phase"),
		templateRuntime: histogramVec("workflowtemplate_runtime", "A histogram of the runtime of workflows using workflowTemplateRef only.",
			templateRuntimeBuckets, "name", "namespace", "cluster_scope"),
		queue:  newQueueMetrics(),
		phases: &phaseGauges{},
	}
	version := counterVec("version", "Build metadata for this Controller.",
		"version", "platform", "go_version", "build_date", "compiler", "git_commit", "git_tree_state", "git_tag")
	version.WithLabelValues(build.Version, build.Platform, build.GoVersion, build.BuildDate, build.Compiler,
		build.GitCommit, build.GitTreeState, build.GitTag).Inc()
	for _, c := range errorCauses {
		m.errors.WithLabelValues(c)
	}
	for _, l := range logLevels {
		m.logs.WithLabelValues(l)
	}
	for _, c := range append(m.queue.collectors(), m.cronPolicy, m.cronTriggered, m.errors, m.deprecated, m.leader, m.requestDuration,
		m.requests, m.logs, m.operations, m.podMissing, m.podPending, m.podsEntered, m.workflowsEntered, m.templateRuns,
		m.templateRuntime, version, m.phases) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering argo's metric names: %w", err)
		}
	}
	return m, nil
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + name, Help: help}, labels)
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + name, Help: help, Buckets: buckets}, labels)
}

// SetLeader records whether this process leads (1) or stands by (0).
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
}

// OperationDone observes one reconcile pass of one workflow.
func (m *Metrics) OperationDone(d time.Duration) { m.operations.Observe(d.Seconds()) }

// OperationPanicked counts a pass that panicked (error_count{cause="OperationPanic"}).
func (m *Metrics) OperationPanicked() { m.errors.WithLabelValues(causeOperationPanic).Inc() }

// CountFrom sets what argo_workflows_gauge and argo_workflows_pods_gauge read at each scrape: workflows by
// status.phase and workflow pods by pod phase, e.g. from the controller's caches. Until it is called (a
// standby), every phase reads 0.
func (m *Metrics) CountFrom(workflows, pods Counts) { m.phases.set(workflows, pods) }

// CountConditionsFrom sets what argo_workflows_workflow_condition reads at each scrape: workflows by the
// status of their PodRunning condition ("True", "False"), e.g. from the controller's cache. Until it is
// called, both read 0.
func (m *Metrics) CountConditionsFrom(podRunning Counts) { m.phases.setConditions(podRunning) }

// phaseGauges is a collector reading the current counts at each scrape.
type phaseGauges struct {
	mu              sync.Mutex
	workflows, pods Counts
	podRunning      Counts
}

var (
	workflowGaugeDesc = prometheus.NewDesc(prefix+"gauge",
		"A gauge of the number of workflows currently in the cluster in each phase.", []string{"status"}, nil)
	podGaugeDesc = prometheus.NewDesc(prefix+"pods_gauge",
		"A gauge of the number of workflow created pods currently in the cluster in each phase.", []string{"phase"}, nil)
	// argo counts the PodRunning condition only, True and False
	conditionGaugeDesc = prometheus.NewDesc(prefix+"workflow_condition",
		"A gauge of the number of workflows with different conditions",
		[]string{"type", "status"}, nil)
)

func (g *phaseGauges) set(workflows, pods Counts) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.workflows, g.pods = workflows, pods
}

func (g *phaseGauges) setConditions(podRunning Counts) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.podRunning = podRunning
}

func (g *phaseGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- workflowGaugeDesc
	ch <- podGaugeDesc
	ch <- conditionGaugeDesc
}

func (g *phaseGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	workflows, pods, podRunning := g.workflows, g.pods, g.podRunning
	g.mu.Unlock()
	collectCounts(ch, workflowGaugeDesc, workflowPhases, workflows)
	collectCounts(ch, podGaugeDesc, podPhases, pods)
	var running map[string]int
	if podRunning != nil {
		running = podRunning()
	}
	for _, status := range conditionStatuses {
		ch <- prometheus.MustNewConstMetric(conditionGaugeDesc, prometheus.GaugeValue, float64(running[status]), podRunningCondition, status)
	}
}

// collectCounts emits one gauge per phase argo reports, 0 where nothing counts.
func collectCounts(ch chan<- prometheus.Metric, desc *prometheus.Desc, phases []string, counts Counts) {
	var got map[string]int
	if counts != nil {
		got = counts()
	}
	for _, phase := range phases {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(got[phase]), phase)
	}
}

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
