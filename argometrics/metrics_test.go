package argometrics

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, BuildInfo{Version: "v1.2.3", Platform: "linux/amd64", GoVersion: "go1.26", Compiler: "gc"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

// exerciseEvents makes every on-event metric emit once.
func exerciseEvents(m *Metrics) {
	m.Triggered("ns", "cron")
	m.ConcurrencyPolicyTriggered("ns", "cron", "Forbid")
	m.PodNodeChanged("ns", NodeState{Phase: wfv1.NodeRunning}, NodeState{Phase: wfv1.NodeError, Message: PodDeletedMessage})
	m.PodNodeChanged("ns", NodeState{}, NodeState{Phase: wfv1.NodePending, Message: "Unschedulable: 0/1 nodes"})
	m.WorkflowEntered(templateWorkflow(wfv1.WorkflowSucceeded), wfv1.WorkflowRunning)
	m.CronScheduleDeprecated("ns")
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: WorkflowQueue, MetricsProvider: m.QueueMetrics()})
	q.ShutDown()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods", nil)
	_, _ = m.RoundTripper(clocktesting.NewFakeClock(time.Time{}))(answer(http.StatusOK)).RoundTrip(req)
}

// answer is a transport that answers every request with code.
type answer int

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(a)}, nil
}

func templateWorkflow(phase wfv1.WorkflowPhase) *wfv1.Workflow {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf"},
		Spec:       wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "tmpl"}},
		Status: wfv1.WorkflowStatus{Phase: phase, StartedAt: metav1.NewTime(start),
			FinishedAt: metav1.NewTime(start.Add(42 * time.Second))},
	}
}

func TestEveryServedCatalogMetricIsRegisteredWithArgosTypeAndLabels(t *testing.T) {
	m, reg := newTestMetrics(t)
	exerciseEvents(m)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	gathered := map[string]*dto.MetricFamily{}
	for _, f := range families {
		gathered[f.GetName()] = f
	}
	types := map[Type]dto.MetricType{Counter: dto.MetricType_COUNTER, Gauge: dto.MetricType_GAUGE, Histogram: dto.MetricType_HISTOGRAM}
	for _, e := range Catalog {
		f, ok := gathered[e.Name]
		switch {
		case !e.Served && ok:
			t.Errorf("%s is not served (%s) but is registered", e.Name, e.Reason)
		case !e.Served && e.Reason == "":
			t.Errorf("%s is not served and gives no reason", e.Name)
		case e.Served && !ok:
			t.Errorf("%s is served but was not gathered", e.Name)
		case e.Served && f.GetType() != types[e.Type]:
			t.Errorf("%s is a %s, want %s", e.Name, f.GetType(), e.Type)
		case e.Served:
			if got := labelNames(f); strings.Join(got, ",") != strings.Join(sorted(e.Labels), ",") {
				t.Errorf("%s has labels %v, want %v", e.Name, got, sorted(e.Labels))
			}
		}
		delete(gathered, e.Name)
	}
	for name := range gathered {
		t.Errorf("%s is registered but not in the catalog", name)
	}
}

func labelNames(f *dto.MetricFamily) []string {
	var names []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	return sorted(names)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestEventsCountAsArgoCountsThem(t *testing.T) {
	tests := []struct {
		sentence string
		do       func(m *Metrics)
		metric   string
		want     string // the metric's exposition lines after do
	}{
		{"a CronWorkflow that ran is counted by name and namespace",
			func(m *Metrics) { m.Triggered("ns", "nightly") }, "argo_workflows_cronworkflows_triggered_total",
			`argo_workflows_cronworkflows_triggered_total{name="nightly",namespace="ns"} 1`},
		{"a concurrencyPolicy that held back a run is counted with the policy",
			func(m *Metrics) { m.ConcurrencyPolicyTriggered("ns", "nightly", "Replace") }, "argo_workflows_cronworkflows_concurrencypolicy_triggered",
			`argo_workflows_cronworkflows_concurrencypolicy_triggered{concurrency_policy="Replace",name="nightly",namespace="ns"} 1`},
		{"a CronWorkflow submission error and a spec error count by cause, the three causes from the start",
			func(m *Metrics) { m.SubmissionError("ns", "a"); m.SpecError("ns", "b"); m.SpecError("ns", "c") }, "argo_workflows_error_count",
			`argo_workflows_error_count{cause="CronWorkflowSpecError"} 2
argo_workflows_error_count{cause="CronWorkflowSubmissionError"} 1
argo_workflows_error_count{cause="OperationPanic"} 0`},
		{"a panicked pass counts as OperationPanic",
			func(m *Metrics) { m.OperationPanicked() }, "argo_workflows_error_count",
			`argo_workflows_error_count{cause="CronWorkflowSpecError"} 0
argo_workflows_error_count{cause="CronWorkflowSubmissionError"} 0
argo_workflows_error_count{cause="OperationPanic"} 1`},
		{"a workflow entering a phase is counted by phase and namespace",
			func(m *Metrics) {
				m.WorkflowEntered(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}}, "")
			}, "argo_workflows_total_count", `argo_workflows_total_count{namespace="ns",phase="Running"} 1`},
		{"a workflowTemplateRef workflow first seen counts New and its phase",
			func(m *Metrics) { m.WorkflowEntered(templateWorkflow(wfv1.WorkflowRunning), "") }, "argo_workflows_workflowtemplate_triggered_total",
			`argo_workflows_workflowtemplate_triggered_total{cluster_scope="false",name="tmpl",namespace="ns",phase="New"} 1
argo_workflows_workflowtemplate_triggered_total{cluster_scope="false",name="tmpl",namespace="ns",phase="Running"} 1`},
		{"a completed workflowTemplateRef workflow records its runtime from start to finish",
			func(m *Metrics) { m.WorkflowEntered(templateWorkflow(wfv1.WorkflowFailed), wfv1.WorkflowRunning) }, "argo_workflows_workflowtemplate_runtime_sum",
			`argo_workflows_workflowtemplate_runtime_sum{cluster_scope="false",name="tmpl",namespace="ns"} 42`},
		{"a new workflow's singular mutex and semaphore count as argo's deprecated features, each use once",
			func(m *Metrics) {
				wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: wfv1.WorkflowSpec{
					Synchronization: &wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "m"}},
					Templates: []wfv1.Template{{Name: "a", Synchronization: &wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "n"},
						Semaphore: &wfv1.SemaphoreRef{}}}, {Name: "b", Synchronization: &wfv1.Synchronization{Mutexes: []*wfv1.Mutex{{Name: "new"}}}}},
				}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}}
				m.WorkflowEntered(wf, "")
				wf.Status.Phase = wfv1.WorkflowSucceeded
				m.WorkflowEntered(wf, wfv1.WorkflowRunning)
			}, "argo_workflows_deprecated_feature",
			`argo_workflows_deprecated_feature{feature="synchronization mutex",namespace="ns"} 2
argo_workflows_deprecated_feature{feature="synchronization semaphore",namespace="ns"} 1`},
		{"a CronWorkflow's singular schedule counts as a deprecated feature",
			func(m *Metrics) { m.CronScheduleDeprecated("ns") }, "argo_workflows_deprecated_feature",
			`argo_workflows_deprecated_feature{feature="cronworkflow schedule",namespace="ns"} 1`},
		{"a pod node going Pending to Running counts Running",
			func(m *Metrics) {
				m.PodNodeChanged("ns", NodeState{Phase: wfv1.NodePending}, NodeState{Phase: wfv1.NodeRunning})
			}, "argo_workflows_pods_total_count", `argo_workflows_pods_total_count{namespace="ns",phase="Running"} 1`},
		{"a pending reason is the message before its first colon",
			func(m *Metrics) {
				m.PodNodeChanged("ns", NodeState{Phase: wfv1.NodePending}, NodeState{Phase: wfv1.NodePending, Message: "Unschedulable: 0/3 nodes are available"})
			}, "argo_workflows_pod_pending_count", `argo_workflows_pod_pending_count{namespace="ns",reason="Unschedulable"} 1`},
		{"PodInitializing is not a pending reason argo counts",
			func(m *Metrics) {
				m.PodNodeChanged("ns", NodeState{Phase: wfv1.NodePending}, NodeState{Phase: wfv1.NodePending, Message: "PodInitializing"})
			}, "argo_workflows_pod_pending_count", ``},
		{"a running node whose pod was deleted counts a missing pod in the node's former phase",
			func(m *Metrics) {
				m.PodNodeChanged("ns", NodeState{Phase: wfv1.NodeRunning}, NodeState{Phase: wfv1.NodeError, Message: PodDeletedMessage})
			}, "argo_workflows_pod_missing", `argo_workflows_pod_missing{node_phase="Running",recently_started="false"} 1`},
		{"leading sets is_leader to 1",
			func(m *Metrics) { m.SetLeader(true) }, "argo_workflows_is_leader", `argo_workflows_is_leader 1`},
		{"losing the lead sets is_leader back to 0",
			func(m *Metrics) { m.SetLeader(true); m.SetLeader(false) }, "argo_workflows_is_leader", `argo_workflows_is_leader 0`},
		{"the phase gauges read the counts at each scrape, 0 for phases without objects",
			func(m *Metrics) {
				m.CountFrom(func() map[string]int { return map[string]int{"Running": 2, "Succeeded": 1} },
					func() map[string]int { return map[string]int{"Running": 3, "Succeeded": 9} })
			}, "argo_workflows_gauge",
			`argo_workflows_gauge{status="Error"} 0
argo_workflows_gauge{status="Failed"} 0
argo_workflows_gauge{status="Pending"} 0
argo_workflows_gauge{status="Running"} 2
argo_workflows_gauge{status="Succeeded"} 1`},
		{"the pods gauge reports Pending and Running only, as argo's",
			func(m *Metrics) {
				m.CountFrom(nil, func() map[string]int { return map[string]int{"Running": 3, "Succeeded": 9} })
			}, "argo_workflows_pods_gauge",
			`argo_workflows_pods_gauge{phase="Pending"} 0
argo_workflows_pods_gauge{phase="Running"} 3`},
		{"the condition gauge counts workflows by their PodRunning condition at each scrape, 0 until counted",
			func(m *Metrics) {
				m.CountConditionsFrom(func() map[string]int { return map[string]int{"True": 2, "False": 5} })
			}, "argo_workflows_workflow_condition",
			`argo_workflows_workflow_condition{status="False",type="PodRunning"} 5
argo_workflows_workflow_condition{status="True",type="PodRunning"} 2`},
		{"the condition gauge reads 0 for both statuses before anything counts",
			func(m *Metrics) {}, "argo_workflows_workflow_condition",
			`argo_workflows_workflow_condition{status="False",type="PodRunning"} 0
argo_workflows_workflow_condition{status="True",type="PodRunning"} 0`},
		{"a busy worker shows until it is free",
			func(m *Metrics) {
				m.WorkerBusy(WorkflowQueue)
				m.WorkerBusy(WorkflowQueue)
				m.WorkerFree(WorkflowQueue)
			},
			"argo_workflows_workers_busy_count", `argo_workflows_workers_busy_count{worker_type="workflow_queue"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			m, reg := newTestMetrics(t)
			tt.do(m)
			if got := exposition(t, reg, tt.metric); got != tt.want {
				t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tt.metric, got, tt.want)
			}
		})
	}
}

// exposition is the registry's text exposition lines of one series name, without comments.
func exposition(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	var lines []string
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for series, value := range seriesOf(f, s) {
				if series == name {
					lines = append(lines, series+labelText(s)+" "+strconv.FormatFloat(value, 'g', -1, 64))
				}
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// seriesOf is a sample's value under each series name the text format gives it (buckets left out).
func seriesOf(f *dto.MetricFamily, s *dto.Metric) map[string]float64 {
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return map[string]float64{f.GetName(): s.GetCounter().GetValue()}
	case dto.MetricType_GAUGE:
		return map[string]float64{f.GetName(): s.GetGauge().GetValue()}
	case dto.MetricType_HISTOGRAM:
		return map[string]float64{f.GetName() + "_count": float64(s.GetHistogram().GetSampleCount()),
			f.GetName() + "_sum": s.GetHistogram().GetSampleSum()}
	}
	return nil
}

func labelText(s *dto.Metric) string {
	if len(s.GetLabel()) == 0 {
		return ""
	}
	var pairs []string
	for _, l := range s.GetLabel() {
		pairs = append(pairs, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

func TestTheWorkflowQueueReportsArgosQueueMetrics(t *testing.T) {
	m, reg := newTestMetrics(t)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: WorkflowQueue, MetricsProvider: m.QueueMetrics()})
	defer q.ShutDown()
	q.Add("ns/a")
	q.Add("ns/b")
	key, _ := q.Get()
	q.Done(key)
	for metric, want := range map[string]string{
		"argo_workflows_queue_adds_count":                 `argo_workflows_queue_adds_count{queue_name="workflow_queue"} 2`,
		"argo_workflows_queue_depth_gauge":                `argo_workflows_queue_depth_gauge{queue_name="workflow_queue"} 1`,
		"argo_workflows_queue_latency_count":              `argo_workflows_queue_latency_count{queue_name="workflow_queue"} 1`,
		"argo_workflows_queue_duration_count":             `argo_workflows_queue_duration_count{queue_name="workflow_queue"} 1`,
		"argo_workflows_queue_retries":                    `argo_workflows_queue_retries{queue_name="workflow_queue"} 0`,
		"argo_workflows_workers_busy_count":               `argo_workflows_workers_busy_count{worker_type="workflow_queue"} 0`,
		"argo_workflows_queue_unfinished_work":            `argo_workflows_queue_unfinished_work{queue_name="workflow_queue"} 0`,
		"argo_workflows_queue_longest_running":            `argo_workflows_queue_longest_running{queue_name="workflow_queue"} 0`,
		"argo_workflows_operation_duration_seconds_count": `argo_workflows_operation_duration_seconds_count 0`,
	} {
		if got := exposition(t, reg, metric); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", metric, got, want)
		}
	}
}

func TestRequestsAreCountedByKindVerbAndCode(t *testing.T) {
	tests := []struct {
		sentence, method, path string
		watch                  bool
		verb, kind             string
	}{
		{"a list of pods in a namespace", http.MethodGet, "/api/v1/namespaces/ns/pods", false, "List", "pods"},
		{"a list across namespaces", http.MethodGet, "/apis/argoproj.io/v1alpha1/workflows", false, "List", "workflows"},
		{"a watch", http.MethodGet, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows", true, "Watch", "workflows"},
		{"a get of one pod", http.MethodGet, "/api/v1/namespaces/ns/pods/p", false, "Get", "pods"},
		{"a get of a namespace", http.MethodGet, "/api/v1/namespaces/ns", false, "Get", "namespaces"},
		{"a create", http.MethodPost, "/api/v1/namespaces/ns/pods", false, "Create", "pods"},
		{"an update of a subresource", http.MethodPut, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/w/status", false, "Update", "workflows/status"},
		{"a patch", http.MethodPatch, "/api/v1/namespaces/ns/pods/p", false, "Patch", "pods"},
		{"a delete", http.MethodDelete, "/api/v1/namespaces/ns/pods/p", false, "Delete", "pods"},
		{"a delete of a collection", http.MethodDelete, "/api/v1/namespaces/ns/pods", false, "DeleteCollection", "pods"},
		{"a get of a cluster-scoped object", http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", false, "Get", "customresourcedefinitions"},
		{"a path that is no API resource", http.MethodGet, "/version", false, "List", "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			verb, kind := describeRequest(tt.method, tt.path, tt.watch)
			if verb != tt.verb || kind != tt.kind {
				t.Errorf("describeRequest(%s %s) = %s %s, want %s %s", tt.method, tt.path, verb, kind, tt.verb, tt.kind)
			}
		})
	}
}

func TestTheRoundTripperCountsAndTimesAnsweredRequests(t *testing.T) {
	m, reg := newTestMetrics(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk.Step(300 * time.Millisecond)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	client := &http.Client{Transport: m.RoundTripper(clk)(http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/api/v1/namespaces/ns/pods/p")
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	if got, want := exposition(t, reg, "argo_workflows_k8s_request_total"), `argo_workflows_k8s_request_total{kind="pods",status_code="404",verb="Get"} 1`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := exposition(t, reg, "argo_workflows_k8s_request_duration_sum"), `argo_workflows_k8s_request_duration_sum{kind="pods",status_code="404",verb="Get"} 0.3`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLogRecordsAreCountedByArgosLevelNames(t *testing.T) {
	m, reg := newTestMetrics(t)
	log := slog.New(m.CountLogs(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("k", "v")
	log.Debug("not counted")
	log.Info("one")
	log.WithGroup("g").Warn("two")
	log.ErrorContext(context.Background(), "three")
	log.Error("four")
	want := `argo_workflows_log_messages{level="error"} 2
argo_workflows_log_messages{level="info"} 1
argo_workflows_log_messages{level="warning"} 1`
	if got := exposition(t, reg, "argo_workflows_log_messages"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestVersionCarriesTheBuild(t *testing.T) {
	_, reg := newTestMetrics(t)
	want := `argo_workflows_version{build_date="",compiler="gc",git_commit="",git_tag="",git_tree_state="",go_version="go1.26",platform="linux/amd64",version="v1.2.3"} 1`
	if got := exposition(t, reg, "argo_workflows_version"); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
