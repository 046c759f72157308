package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/custommetrics"
	"github.com/wfguard/wfguard/extstatus"
)

const metricsWorkflow = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  metrics:
    prometheus:
    - name: wf_result
      help: Workflows by status
      labels: [{key: status, value: "{{workflow.status}}"}]
      counter: {value: "1"}
    - name: wf_duration
      help: Workflow duration
      gauge: {realtime: true, value: "{{workflow.duration}}"}
  templates:
  - name: main
    steps:
    - - {name: a, template: work, arguments: {parameters: [{name: tag, value: one}]}}
      - {name: b, template: work, arguments: {parameters: [{name: tag, value: two}]}}
  - name: work
    inputs: {parameters: [{name: tag}]}
    metrics:
      prometheus:
      - name: work_result
        help: Work by tag and status
        labels: [{key: tag, value: "{{inputs.parameters.tag}}"}, {key: status, value: "{{status}}"}]
        counter: {value: "1"}
      - name: work_succeeded
        help: Succeeded work
        when: "{{status}} == Succeeded"
        counter: {value: "1"}
    container: {image: alpine, command: [echo]}
`

const retriedMetricsWorkflow = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: work
  templates:
  - name: work
    retryStrategy: {limit: "1"}
    metrics:
      prometheus:
      - name: attempts
        help: Attempts by status
        labels: [{key: status, value: "{{status}}"}]
        counter: {value: "1"}
    container: {image: alpine, command: [echo]}
`

const expandedMetricsWorkflow = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: each, template: work, arguments: {parameters: [{name: tag, value: "{{item}}"}]}, withItems: [p, q]}
  - name: work
    inputs: {parameters: [{name: tag}]}
    metrics:
      prometheus:
      - {name: items, help: Items by tag, labels: [{key: tag, value: "{{inputs.parameters.tag}}"}], counter: {value: "1"}}
    container: {image: alpine, command: [echo]}
`

func TestCustomMetricsAreEmittedOncePerCompletionAsArgoEmitsThem(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		manifest string
		podPhase corev1.PodPhase
		want     string
	}{
		{"a retried template counts each attempt once: the last one through its retry node",
			retriedMetricsWorkflow, corev1.PodFailed, `
# HELP argo_workflows_attempts Attempts by status
# TYPE argo_workflows_attempts counter
argo_workflows_attempts{status="Failed"} 2
`},
		{"a task expanded by withItems counts its items, not its task group",
			expandedMetricsWorkflow, corev1.PodSucceeded, `
# HELP argo_workflows_items Items by tag
# TYPE argo_workflows_items counter
argo_workflows_items{tag="p"} 1
argo_workflows_items{tag="q"} 1
`},
		{"each step's completion is counted once with its templated labels, and the workflow's once at its end",
			metricsWorkflow, corev1.PodSucceeded, `
# HELP argo_workflows_wf_duration Workflow duration
# TYPE argo_workflows_wf_duration gauge
argo_workflows_wf_duration 1
# HELP argo_workflows_wf_result Workflows by status
# TYPE argo_workflows_wf_result counter
argo_workflows_wf_result{status="Succeeded"} 1
# HELP argo_workflows_work_result Work by tag and status
# TYPE argo_workflows_work_result counter
argo_workflows_work_result{status="Succeeded",tag="one"} 1
argo_workflows_work_result{status="Succeeded",tag="two"} 1
# HELP argo_workflows_work_succeeded Succeeded work
# TYPE argo_workflows_work_succeeded counter
argo_workflows_work_succeeded 2
`},
		{"a metric whose when does not hold is not emitted at all",
			metricsWorkflow, corev1.PodFailed, `
# HELP argo_workflows_wf_duration Workflow duration
# TYPE argo_workflows_wf_duration gauge
argo_workflows_wf_duration 1
# HELP argo_workflows_wf_result Workflows by status
# TYPE argo_workflows_wf_result counter
argo_workflows_wf_result{status="Failed"} 1
# HELP argo_workflows_work_result Work by tag and status
# TYPE argo_workflows_work_result counter
argo_workflows_work_result{status="Failed",tag="one"} 1
argo_workflows_work_result{status="Failed",tag="two"} 1
`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			// The scrape is long after the end: a finished workflow's realtime gauge keeps its duration.
			custom, err := custommetrics.NewRegistry(reg, func() time.Time { return time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) })
			if err != nil {
				t.Fatal(err)
			}
			wf, _ := runToEndWith(t, &Engine{Metrics: custom}, tc.manifest, tc.podPhase, func(p *Pass) { emitAll(t, custom, p) })
			if !wf.Status.Phase.Completed() {
				t.Fatalf("workflow did not complete: %s\n%s", wf.Status.Phase, nodeTree(wf))
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
			if got := metricsErrors(wf); len(got) > 0 {
				t.Errorf("MetricsError conditions %q, want none", got)
			}
		})
	}
}

// metricsErrors are the messages of the workflow's MetricsError conditions.
func metricsErrors(wf *wfv1.Workflow) []string {
	var got []string
	for _, c := range wf.Status.Conditions {
		if c.Type == wfv1.ConditionTypeMetricsError {
			got = append(got, c.Message)
		}
	}
	return got
}

func TestAMetricArgoCannotConstructIsReportedOnTheWorkflowWhichStillRuns(t *testing.T) {
	manifest := strings.Replace(metricsWorkflow, "- name: wf_result\n", "- name: wf-result\n", 1)
	custom, err := custommetrics.NewRegistry(prometheus.NewRegistry(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := runToEndWith(t, &Engine{Metrics: custom}, manifest, corev1.PodSucceeded, func(p *Pass) { emitAll(t, custom, p) })
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("workflow %s %q, want Succeeded", wf.Status.Phase, wf.Status.Message)
	}
	want := "could not construct metric 'wf-result': metric name is invalid: names may only contain alphanumeric characters or '_'"
	got := metricsErrors(wf)
	if len(got) != 1 || got[0] != want {
		t.Errorf("MetricsError conditions %q, want one %q", got, want)
	}
}

// emitAll records a persisted pass's emissions, as the controller does.
func emitAll(t *testing.T, r *custommetrics.Registry, p *Pass) {
	t.Helper()
	for _, em := range p.Metrics {
		if err := r.Emit(em); err != nil {
			t.Errorf("emitting %s: %v", em.Metric.Name, err)
		}
	}
}

func TestARunningNodesRealtimeGaugeFollowsTheScrapeFromTheNodesStart(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: work
  templates:
  - name: work
    metrics:
      prometheus:
      - {name: node_seconds, help: Node duration, gauge: {realtime: true, value: "{{duration}}"}}
      - {name: node_done, help: Completed nodes, counter: {value: "1"}}
    container: {image: alpine, command: [sleep, "60"]}
`
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewPedanticRegistry()
	custom, err := custommetrics.NewRegistry(reg, func() time.Time { return start.Add(90 * time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, Metrics: custom}
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: start, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour, AtStart: StartStateOf(wf)}
	if _, err := e.Start(p); err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	emitAll(t, custom, p)
	// Only the realtime gauge of the node just created: the counter waits for the node's end.
	want := `
# HELP argo_workflows_node_seconds Node duration
# TYPE argo_workflows_node_seconds gauge
argo_workflows_node_seconds 90
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
