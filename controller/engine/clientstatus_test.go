package engine

import (
	"errors"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/clientstatus"
)

// lastNightsRun is the run "wf-old" a workflow "wf" is estimated from: 90 s long, its step a 20 s.
func lastNightsRun() *wfv1.Workflow {
	start := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	after := func(s int) metav1.Time { return metav1.NewTime(start.Add(time.Duration(s) * time.Second)) }
	old := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf-old", Namespace: "ns", UID: "old"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: start, FinishedAt: after(90), Nodes: wfv1.Nodes{}}}
	for name, seconds := range map[string]int{"wf-old": 90, "wf-old[0]": 25, "wf-old[0].a": 20} {
		old.Status.Nodes[old.NodeID(name)] = wfv1.NodeStatus{ID: old.NodeID(name), Name: name, StartedAt: start, FinishedAt: after(seconds)}
	}
	return old
}

// The engine writes what argo's operator writes as it goes: the estimates when the workflow and each node
// start, a pod's annotated progress when its pod is built, and the Completed condition when it completes.
func TestTheEngineEstimatesMarksCompletedAndTakesAPodsAnnotatedProgress(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: u1, labels: {workflows.argoproj.io/cron-workflow: nightly}}
spec:
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: a, template: work}, {name: b, template: work}]]}
  - name: work
    metadata: {annotations: {workflows.argoproj.io/progress: 0/20}}
    container: {image: alpine, command: ["true"]}`
	asked := 0
	e := &Engine{Estimates: clientstatus.NewEstimates(func(namespace, key, value string) (*wfv1.Workflow, error) {
		asked++
		if namespace != "ns" || key != "workflows.argoproj.io/cron-workflow" || value != "nightly" {
			t.Errorf("estimated from %s %s=%s", namespace, key, value)
		}
		return lastNightsRun(), nil
	})}
	wf, _ := runToEnd(t, e, manifest, corev1.PodSucceeded)
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow %s: %s\n%s", wf.Status.Phase, wf.Status.Message, nodeTree(wf))
	}
	if wf.Status.EstimatedDuration != 90 {
		t.Errorf("status.estimatedDuration = %d, want the last run's 90", wf.Status.EstimatedDuration)
	}
	for name, want := range map[string]wfv1.EstimatedDuration{"wf": 90, "wf[0]": 25, "wf[0].a": 20, "wf[0].b": 0} {
		if got := wf.Status.Nodes[wf.NodeID(name)].EstimatedDuration; got != want {
			t.Errorf("node %s estimatedDuration = %d, want %d (the last run's node of the same name)", name, got, want)
		}
	}
	for _, name := range []string{"wf[0].a", "wf[0].b"} {
		if got := wf.Status.Nodes[wf.NodeID(name)].Progress; got != "0/20" {
			t.Errorf("node %s progress = %q, want its pod's annotated 0/20", name, got)
		}
	}
	// Without the controller's writes in between (they upsert PodRunning), completion records PodRunning
	// first, in argo's order.
	want := wfv1.Conditions{{Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionFalse}, {Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionTrue}}
	if len(wf.Status.Conditions) != 2 || wf.Status.Conditions[0] != want[0] || wf.Status.Conditions[1] != want[1] {
		t.Errorf("conditions %v, want %v", wf.Status.Conditions, want)
	}
	if gc := wf.Status.ArtifactGCStatus; gc == nil || !gc.NotSpecified {
		t.Errorf("artifactGCStatus %+v, want notSpecified as argo records for a workflow without artifact GC", gc)
	}
	if asked != 1 || e.Estimates.Len() != 0 {
		t.Errorf("the estimate was looked up %d times (want once) and %d are kept after completion (want 0)", asked, e.Estimates.Len())
	}
}

// A workflow that fails at its start is Completed too, estimated as argo estimates whenever it stamps a
// start.
func TestAWorkflowRefusedAtItsStartIsCompleted(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: u2}
spec: {entrypoint: nowhere, templates: [{name: main, container: {image: alpine}}]}`
	wf, _ := runToEnd(t, &Engine{}, manifest, corev1.PodSucceeded)
	if !wf.Status.Phase.Completed() || len(wf.Status.Conditions) != 1 || wf.Status.Conditions[0].Type != wfv1.ConditionTypeCompleted {
		t.Errorf("workflow %s with conditions %v, want completed with Completed=True", wf.Status.Phase, wf.Status.Conditions)
	}
}

// argo records artifactGCStatus.notSpecified once a workflow passed validation; one its validation refuses
// has none.
func TestAnInvalidWorkflowGetsNoArtifactGCStatus(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: u3}
spec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}`
	e := &Engine{Validate: func(*wfv1.Workflow) error { return errors.New("refused by argo's validation") }}
	wf, _ := runToEnd(t, e, manifest, corev1.PodSucceeded)
	if wf.Status.Phase != wfv1.WorkflowFailed || wf.Status.ArtifactGCStatus != nil {
		t.Errorf("workflow %s with artifactGCStatus %+v, want Failed without one", wf.Status.Phase, wf.Status.ArtifactGCStatus)
	}
}
