package argometrics

// Type is a metric's Prometheus type as argo v3.7's exporter exposes it.
type Type string

// Metric types.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Presence says when a served metric shows up on /metrics.
type Presence string

const (
	// Always: from start-up (unlabelled, or with every label value known up front).
	Always Presence = "always"
	// AfterWorkflow: once the controller has run a workflow with a pod.
	AfterWorkflow Presence = "after a workflow ran"
	// OnEvent: once its event happened (a CronWorkflow trigger, a workflowTemplateRef workflow, ...).
	OnEvent Presence = "on its event"
)

// Entry is one of argo v3.7's controller metrics.
type Entry struct {
	// Name is the exposed name (argo_workflows_ + argo's instrument name; argo's exporter adds no unit
	// and no _total suffix).
	Name   string
	Type   Type
	Labels []string
	// Served is false for metrics wfguard does not expose; Reason says why.
	Served   bool
	Presence Presence
	Reason   string
}

// Catalog is every controller metric argo v3.7 exposes, in argo's documentation order.
var Catalog = []Entry{
	{Name: "argo_workflows_cronworkflows_concurrencypolicy_triggered", Type: Counter, Labels: []string{"name", "namespace", "concurrency_policy"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_cronworkflows_triggered_total", Type: Counter, Labels: []string{"name", "namespace"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_deprecated_feature", Type: Counter, Labels: []string{"feature", "namespace"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_error_count", Type: Counter, Labels: []string{"cause"}, Served: true, Presence: Always},
	{Name: "argo_workflows_gauge", Type: Gauge, Labels: []string{"status"}, Served: true, Presence: Always},
	{Name: "argo_workflows_is_leader", Type: Gauge, Served: true, Presence: Always},
	{Name: "argo_workflows_k8s_request_duration", Type: Histogram, Labels: []string{"kind", "verb", "status_code"}, Served: true, Presence: Always},
	{Name: "argo_workflows_k8s_request_total", Type: Counter, Labels: []string{"kind", "verb", "status_code"}, Served: true, Presence: Always},
	{Name: "argo_workflows_log_messages", Type: Counter, Labels: []string{"level"}, Served: true, Presence: Always},
	{Name: "argo_workflows_operation_duration_seconds", Type: Histogram, Served: true, Presence: Always},
	{Name: "argo_workflows_pod_missing", Type: Counter, Labels: []string{"node_phase", "recently_started"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_pod_pending_count", Type: Counter, Labels: []string{"reason", "namespace"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_pods_gauge", Type: Gauge, Labels: []string{"phase"}, Served: true, Presence: Always},
	{Name: "argo_workflows_pods_total_count", Type: Counter, Labels: []string{"phase", "namespace"}, Served: true, Presence: AfterWorkflow},
	{Name: "argo_workflows_queue_adds_count", Type: Counter, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_depth_gauge", Type: Gauge, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_duration", Type: Histogram, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_latency", Type: Histogram, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_longest_running", Type: Gauge, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_retries", Type: Counter, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_queue_unfinished_work", Type: Gauge, Labels: []string{"queue_name"}, Served: true, Presence: Always},
	{Name: "argo_workflows_total_count", Type: Counter, Labels: []string{"phase", "namespace"}, Served: true, Presence: AfterWorkflow},
	{Name: "argo_workflows_version", Type: Counter, Labels: []string{"version", "platform", "go_version", "build_date", "compiler", "git_commit", "git_tree_state", "git_tag"}, Served: true, Presence: Always},
	{Name: "argo_workflows_workers_busy_count", Type: Gauge, Labels: []string{"worker_type"}, Served: true, Presence: Always},
	{Name: "argo_workflows_workflow_condition", Type: Gauge, Labels: []string{"type", "status"}, Served: true, Presence: Always},
	{Name: "argo_workflows_workflowtemplate_runtime", Type: Histogram, Labels: []string{"name", "namespace", "cluster_scope"}, Served: true, Presence: OnEvent},
	{Name: "argo_workflows_workflowtemplate_triggered_total", Type: Counter, Labels: []string{"name", "namespace", "cluster_scope", "phase"}, Served: true, Presence: OnEvent},
}

// ExposedNames are the names of every series family the served metrics put on /metrics, a histogram's
// _bucket, _sum and _count included: names nothing else may register.
func ExposedNames() []string {
	var names []string
	for _, e := range Catalog {
		if !e.Served {
			continue
		}
		names = append(names, e.Name)
		if e.Type == Histogram {
			names = append(names, e.Name+"_bucket", e.Name+"_sum", e.Name+"_count")
		}
	}
	return names
}
