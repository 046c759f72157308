package e2e_test

import (
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// reportRun is a run of the "report" WorkflowTemplate (by its label): two steps, each a pod asking for a
// CPU, each running over a second.
func reportRun(name string) string {
	return fmt.Sprintf(`
metadata: {name: %s, labels: {workflows.argoproj.io/workflow-template: report}}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: work}
      - {name: b, template: work}
  - name: work
    container: {image: alpine, command: ["true"], resources: {requests: {cpu: "1"}}}
`, name)
}

func condition(wf *wfv1.Workflow, t wfv1.ConditionType) metav1.ConditionStatus {
	for _, c := range wf.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// What argo get shows under stock argo, it shows under wfguard: PodRunning while a pod runs; at the end the
// progress, the resource durations, the Completed condition; and a later run of the same template is
// estimated from the earlier one.
func TestArgoGetShowsProgressDurationsConditionsAndEstimates(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"work": {RunFor: 1100 * time.Millisecond, Hold: hold},
	}}})
	first := e.Submit(reportRun("report-1"))
	e.WaitFor(first.Name, "PodRunning=True while its pods run", 30*time.Second, func(wf *wfv1.Workflow) bool {
		return condition(wf, wfv1.ConditionTypePodRunning) == metav1.ConditionTrue
	})
	close(hold)
	done := e.WaitCompleted(first.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	if done.Status.Progress != "2/2" {
		t.Errorf("status.progress %q, want 2/2 (argo get's Progress)", done.Status.Progress)
	}
	for _, name := range []string{"report-1", "report-1[0]"} {
		if got := harness.NodeByName(done, name).Progress; got != "2/2" {
			t.Errorf("node %s progress %q, want the sum 2/2", name, got)
		}
	}
	for _, name := range []string{"report-1[0].a", "report-1[0].b"} {
		n := harness.NodeByName(done, name)
		if n.Progress != "1/1" || n.ResourcesDuration[corev1.ResourceCPU] < 1 || n.ResourcesDuration[corev1.ResourceMemory] < 1 {
			t.Errorf("pod node %s: progress %q, resourcesDuration %v; want 1/1 and a CPU and memory second at least", name, n.Progress, n.ResourcesDuration)
		}
	}
	if d := done.Status.ResourcesDuration; d[corev1.ResourceCPU] < 2 || d[corev1.ResourceMemory] < 2 {
		t.Errorf("status.resourcesDuration %v, want the pods' sum (at least 2 s of CPU and of memory)", d)
	}
	if condition(done, wfv1.ConditionTypeCompleted) != metav1.ConditionTrue || condition(done, wfv1.ConditionTypePodRunning) != metav1.ConditionFalse {
		t.Errorf("conditions %v, want Completed=True and PodRunning=False", done.Status.Conditions)
	}

	// The first run's labels now say Succeeded: the next run of the template is estimated from it.
	e.WaitFor(first.Name, "labelled Succeeded", 10*time.Second, func(wf *wfv1.Workflow) bool {
		return wf.Labels["workflows.argoproj.io/phase"] == string(wfv1.WorkflowSucceeded)
	})
	second := e.WaitCompleted(e.Submit(reportRun("report-2")).Name)
	want := wfv1.NewEstimatedDuration(done.Status.GetDuration())
	if want < 1 || second.Status.EstimatedDuration != want {
		t.Errorf("status.estimatedDuration %d, want the first run's %d s", second.Status.EstimatedDuration, want)
	}
	if got, want := harness.NodeByName(second, "report-2[0].a").EstimatedDuration, wfv1.NewEstimatedDuration(harness.NodeByName(done, "report-1[0].a").GetDuration()); got != want {
		t.Errorf("node a's estimatedDuration %d, want the first run's a: %d", got, want)
	}
}
