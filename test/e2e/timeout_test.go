package e2e_test

import (
	"context"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const deadlineExceeded = "Pod was active on the node longer than the specified deadline"

func TestATemplateTimeoutOrDeadlineEndsItsPodAndFailsOnlyThatBranch(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	for _, tc := range []struct {
		sentence, name, bound string
		wantADS               int64
	}{
		{"a container running past its timeout is ended by the kubelet", "timeout-run", "timeout: 4s", 4},
		{"a container running past its template activeDeadlineSeconds is ended by the kubelet", "ads-run", "activeDeadlineSeconds: 3", 3},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: slow, template: slow}
      - {name: fast, template: fast}
      - {name: after, template: fast, depends: slow}
  - name: slow
    ` + tc.bound + `
    metadata: {annotations: {simnode.wfguard.io/run-for: 1h}}
    container: {image: alpine, command: [sleep, "3600"]}
  - name: fast
    timeout: 1h
    container: {image: alpine, command: ["true"]}
`)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowFailed {
				t.Errorf("workflow = %s %q, want Failed", done.Status.Phase, done.Status.Message)
			}
			assertNodes(t, done, map[string]nodeSummary{
				tc.name:            {wfv1.NodeTypeDAG, wfv1.NodeFailed, ""},
				tc.name + ".slow":  {wfv1.NodeTypePod, wfv1.NodeFailed, deadlineExceeded},
				tc.name + ".fast":  {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
				tc.name + ".after": {wfv1.NodeTypeSkipped, wfv1.NodeOmitted, "omitted: depends condition not met"},
			})
			if ads := e.PodOf(done, tc.name+".slow").Spec.ActiveDeadlineSeconds; ads == nil || *ads != tc.wantADS {
				t.Errorf("the slow pod's activeDeadlineSeconds = %v, want %d", ads, tc.wantADS)
			}
			if ads := e.PodOf(done, tc.name+".fast").Spec.ActiveDeadlineSeconds; ads == nil || *ads != 3600 {
				t.Errorf("the fast pod's activeDeadlineSeconds = %v, want its one-hour timeout", ads)
			}
			if slow := harness.NodeByName(done, tc.name+".slow"); slow.TaskResultSynced == nil || !*slow.TaskResultSynced {
				t.Errorf("the timed-out node completed without its result gate opening: %+v", slow.TaskResultSynced)
			}
		})
	}
}

func TestAPodStillPendingPastItsTimeoutFailsWithArgosMessage(t *testing.T) {
	// The controller's clock is fake: the node's timeout passes when the test says, while the simulated
	// kubelet (real clock) keeps the pod Pending and only ends it when the controller stops it.
	fake := testingclock.NewFakeClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{clock: fake, script: simnode.Script{Default: simnode.Behavior{PendingFor: time.Hour}}})
	wf := e.Submit(`
metadata: {name: pending-timeout}
spec:
  entrypoint: main
  templates:
  - name: main
    timeout: 10m
    container: {image: alpine, command: ["true"]}
`)
	// Scheduled, as the controller sees it: an unscheduled pod past its timeout is deleted instead of stopped,
	// and under load the simulated scheduler can bind it after the clock has already passed the timeout.
	e.WaitFor(wf.Name, "pending on a node", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, wf.Name)
		return n != nil && n.Phase == wfv1.NodePending && n.HostNodeName != ""
	})
	// Move the controller's clock a minute per poll until the node fails: no real waiting.
	e.WaitFor(wf.Name, "failed its node", 60*time.Second, func(wf *wfv1.Workflow) bool {
		if n := harness.NodeByName(wf, wf.Name); n != nil && n.Phase == wfv1.NodeFailed {
			return true
		}
		fake.Step(time.Minute)
		return false
	})
	// The clock stands still now (so the 2m result wait cannot expire): only the stopped pod's report, its
	// wait container ending, opens the node's gate and lets the workflow complete.
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != "timeout" {
		t.Errorf("workflow = %s %q, want Failed %q", done.Status.Phase, done.Status.Message, "timeout")
	}
	assertNodes(t, done, map[string]nodeSummary{wf.Name: {wfv1.NodeTypePod, wfv1.NodeFailed, "timeout"}})
	if n := harness.NodeByName(done, wf.Name); n.FinishedAt.Sub(n.StartedAt.Time) < 10*time.Minute {
		t.Errorf("the node failed %s after it started, before its 10m timeout", n.FinishedAt.Sub(n.StartedAt.Time))
	}
	// The stopped pod's executor reports before the kubelet writes the pod's final phase, so the workflow can
	// complete just before the pod shows how it ended.
	var pod *corev1.Pod
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pod = e.PodOf(done, wf.Name)
		return pod.Status.Reason == "DeadlineExceeded", nil
	}); err != nil {
		t.Errorf("the pending pod was not stopped: phase %s reason %q", pod.Status.Phase, pod.Status.Reason)
	}
}

func TestTimeoutsArgoRejectsFailTheWorkflowAtStart(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		sentence, name, template, message string
	}{
		{"a timeout on a steps template", "timeout-steps", `{name: main, timeout: 1m, steps: [[{name: a, template: leaf}]]}`,
			"invalid spec: Steps template doesn't support timeout field."},
		{"a timeout that is a bare number", "timeout-number", `{name: main, timeout: "10", container: {image: alpine}}`,
			"invalid spec: main has invalid duration format in timeout."},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  entrypoint: main
  templates:
  - ` + tc.template + `
  - {name: leaf, container: {image: alpine}}
`)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != tc.message {
				t.Errorf("workflow = %s %q, want Failed %q", done.Status.Phase, done.Status.Message, tc.message)
			}
			if len(done.Status.Nodes) != 0 {
				t.Errorf("a rejected workflow has nodes:\n%s", harness.Describe(done))
			}
		})
	}
}
