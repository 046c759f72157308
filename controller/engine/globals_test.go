package engine

import (
	"encoding/json"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestWorkflowDurationCountsFromTheStartUntilTheFinish(t *testing.T) {
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	now := start.Add(10*time.Second + 309499*time.Microsecond)
	for _, tc := range []struct {
		sentence string
		status   wfv1.WorkflowStatus
		want     string
	}{
		{"a workflow not started yet has run 0 seconds", wfv1.WorkflowStatus{}, "0.000000"},
		{"a running workflow has run until now", wfv1.WorkflowStatus{StartedAt: metav1.NewTime(start)}, "10.309499"},
		{"a finished workflow has run until its finish",
			wfv1.WorkflowStatus{StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(start.Add(3 * time.Second))}, "3.000000"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := workflowDuration(&wfv1.Workflow{Status: tc.status}, now); got != tc.want {
				t.Fatalf("workflow.duration %q, want %q", got, tc.want)
			}
		})
	}
}

// argo's exit-handlers example prints {{workflow.duration}}: a pod must never be created with it unresolved.
func TestAPodsArgumentsGetTheWorkflowsDuration(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: timed, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - {name: main, container: {image: alpine, command: [echo], args: ["took {{workflow.duration}}"]}}
`), wf); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	wf.Status.Phase, wf.Status.StartedAt = wfv1.WorkflowRunning, metav1.NewTime(start) // started by an earlier pass
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods}
	runPass(t, e, wf, start.Add(2*time.Second))
	pod := pods.created[wf.NodeID("timed")]
	if pod == nil {
		t.Fatal("no pod created")
	}
	main := findMain(pod)
	if got := main.Args[len(main.Args)-1]; got != "took 2.000000" {
		t.Fatalf("main's last argument %q, want %q", got, "took 2.000000")
	}
}

func findMain(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "main" {
			return &pod.Spec.Containers[i]
		}
	}
	return &corev1.Container{}
}

// argo merges spec.podMetadata into each of the workflow's own templates when it resolves one: the pod and
// its ARGO_TEMPLATE carry it, it wins over the template's own metadata, and the spec stays as submitted.
func TestTheWorkflowsPodMetadataIsMergedIntoItsTemplatesAsArgoDoes(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: md, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  podMetadata: {labels: {tier: from-workflow}, annotations: {role: arn}}
  templates:
  - name: main
    metadata: {labels: {tier: from-template, app: print}}
    container: {image: alpine, command: [echo]}
`), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods}
	runPass(t, e, wf, time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	pod := pods.created[wf.NodeID("md")]
	if pod == nil {
		t.Fatal("no pod created")
	}
	if pod.Labels["tier"] != "from-workflow" || pod.Labels["app"] != "print" || pod.Annotations["role"] != "arn" {
		t.Errorf("pod labels %v annotations %v, want tier=from-workflow, app=print, role=arn", pod.Labels, pod.Annotations)
	}
	var tmpl wfv1.Template
	for _, env := range pod.Spec.InitContainers[0].Env {
		if env.Name == "ARGO_TEMPLATE" {
			if err := json.Unmarshal([]byte(env.Value), &tmpl); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tmpl.Metadata.Labels["tier"] != "from-workflow" || tmpl.Metadata.Annotations["role"] != "arn" {
		t.Errorf("ARGO_TEMPLATE metadata %+v, want the workflow's podMetadata merged in", tmpl.Metadata)
	}
	if got := wf.Spec.Templates[0].Metadata.Labels["tier"]; got != "from-template" {
		t.Errorf("the spec's template was changed: tier=%q", got)
	}
}
