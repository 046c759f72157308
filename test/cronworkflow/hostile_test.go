package cronworkflow_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/cronworkflow"
	"github.com/wfguard/wfguard/test/harness"
)

// cronWriter is a client for a user who may create and update CronWorkflows in the env's namespace, as a
// namespace's admins may (argo's CRD has no status subresource, so the status is theirs to write too).
func (e *env) cronWriter(user string) versioned.Interface {
	e.t.Helper()
	return versioned.NewForConfigOrDie(harness.Grant(e.t, cp.Config(), e.Namespace, user, rbacv1.PolicyRule{
		APIGroups: []string{"argoproj.io"}, Resources: []string{"cronworkflows"}, Verbs: []string{"create", "get", "update"}}))
}

// Issue #44 item 9: the missed-run rule walked every tick since status.lastScheduledTime, which the
// CronWorkflow's writer sets: "@every 1s" from the year 1 is 64 billion ticks on every start (minutes of CPU, 820 million from 2000).
func TestAMissedRunFromADateLongAgoIsDecidedAtOnce(t *testing.T) {
	e := newEnv(t)
	admin := e.cronWriter("cron-admin")
	cwf := &wfv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(cronManifest("ages", "pass", "  startingDeadlineSeconds: 60")), cwf); err != nil {
		t.Fatal(err)
	}
	cwf.Spec.Schedules = []string{"@every 1s"}
	// The schedule was in force when the run of the year 1 was scheduled (argo's last-used-schedule), so the
	// missed-run rule applies on the reconciler's first pass.
	cwf.Annotations = map[string]string{"cronworkflows.argoproj.io/last-used-schedule": "@every 1s"}
	cwf.Status.LastScheduledTime = &metav1.Time{Time: time.Date(1, 6, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := admin.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Create(t.Context(), cwf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := e.startReconciler()
	// The latest tick before the reconciler's first pass (the fake clock's start, a whole second) is the
	// second before it, within the 60 s deadline.
	missed := start.Add(-time.Second)
	e.waitRunPhase(runName("ages", missed), wfv1.WorkflowSucceeded)
	e.untilCron("ages", "recorded the missed run", func(c *wfv1.CronWorkflow) bool {
		return c.Status.LastScheduledTime != nil && c.Status.LastScheduledTime.Time.Equal(missed)
	})
	e.armed(start.Add(time.Second), r)
}

// forger is a client for a user who may read CronWorkflows and create workflows in the env's namespace, as
// a namespace's developers may: nothing lets them write a CronWorkflow or delete a workflow.
func (e *env) forger(user string) versioned.Interface {
	e.t.Helper()
	return versioned.NewForConfigOrDie(harness.Grant(e.t, cp.Config(), e.Namespace, user,
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"cronworkflows"}, Verbs: []string{"get"}}))
}

// poseAsRun creates, as forger, a workflow of template tmpl that names cwf as its controller and carries the
// run label, as a run does; finishedAt, when set, makes it a completed run (the CRD has no status
// subresource, so the creator writes the status too).
func (e *env) poseAsRun(forger versioned.Interface, cwf *wfv1.CronWorkflow, name, tmpl string, finishedAt time.Time) {
	e.t.Helper()
	run := &wfv1.Workflow{}
	run.Name = name
	run.Labels = map[string]string{"workflows.argoproj.io/cron-workflow": cwf.Name}
	run.OwnerReferences = []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "CronWorkflow", Name: cwf.Name, UID: cwf.UID,
		Controller: ptr.To(true)}}
	run.Spec = *cwf.Spec.WorkflowSpec.DeepCopy()
	run.Spec.Entrypoint = tmpl
	if !finishedAt.IsZero() {
		run.Labels["workflows.argoproj.io/completed"] = "true"
		run.Labels["workflows.argoproj.io/phase"] = string(wfv1.WorkflowSucceeded)
		run.Status = wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: metav1.NewTime(finishedAt.Add(-time.Minute)),
			FinishedAt: metav1.NewTime(finishedAt)}
	}
	if _, err := forger.ArgoprojV1alpha1().Workflows(e.Namespace).Create(e.t.Context(), run, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating %s as the forger: %v", name, err)
	}
}

// Issue #44 item 6: a run was recognised by a controller ownerReference anyone who may create a workflow
// can write. A forged never-ending run blocked a Forbid CronWorkflow; forged finished runs made the history
// pruning delete the real runs (a delete the forger is refused).
func TestWorkflowsPosingAsRunsNeitherHoldForbidNorPushRealRunsOutOfHistory(t *testing.T) {
	t.Run("a forged never-ending run does not hold a Forbid CronWorkflow", func(t *testing.T) {
		e := newEnv(t)
		defer e.release()
		r := e.startReconciler()
		cwf := e.createCron(cronManifest("forbid", "pass", "  concurrencyPolicy: Forbid"))
		e.armed(minute(1), r)
		e.synced(r, e.cron("forbid")) // quiet: the first pass's write and its echo are done
		mallory := e.forger("mallory")
		n := r.passCount(cwf)
		e.poseAsRun(mallory, cwf, "forbid-1", "hold", time.Time{})
		e.passedAfter(r, cwf, n) // the reconciler has seen it
		e.tick(minute(1), r)
		e.until("the tick decided", func(context.Context) bool { return r.runs("forbidden")+r.runs("created") > 0 })
		if got := r.runs("forbidden"); got != 0 {
			t.Fatalf("wfguard_cronworkflow_runs_total{outcome=forbidden} = %v, want 0: the forged run held the schedule", got)
		}
		e.waitRunPhase(runName("forbid", minute(1)), wfv1.WorkflowSucceeded)
		if active := activeNames(e.cron("forbid")); slices.Contains(active, "forbid-1") {
			t.Errorf("status.active = %v lists the forged run", active)
		}
		if got := r.ignored(); got != 1 {
			t.Errorf("wfguard_cronworkflow_runs_ignored_total = %v, want 1", got)
		}
		e.waitEvent("forbid", cronworkflow.ReasonRunIgnored)
	})
	t.Run("forged finished runs do not push the real runs out of the history", func(t *testing.T) {
		e := newEnv(t)
		r := e.startReconciler()
		cwf := e.createCron(cronManifest("kept", "pass", "  successfulJobsHistoryLimit: 2"))
		real := []string{runName("kept", minute(1)), runName("kept", minute(2))}
		e.tick(minute(1), r)
		e.waitRunPhase(real[0], wfv1.WorkflowSucceeded)
		e.untilCron("kept", "counted the first run", func(c *wfv1.CronWorkflow) bool { return c.Status.Succeeded == 1 })
		// Finished "later" than any real run, so they would be the ones kept.
		mallory := e.forger("mallory")
		e.synced(r, e.cron("kept"))
		future := time.Now().Add(24 * time.Hour)
		for i, name := range []string{"kept-forged-a", "kept-forged-b"} {
			n := r.passCount(cwf)
			e.poseAsRun(mallory, cwf, name, "pass", future.Add(time.Duration(i)*time.Minute))
			e.passedAfter(r, cwf, n) // the reconciler has seen it
		}
		e.tick(minute(2), r)
		e.waitRunPhase(real[1], wfv1.WorkflowSucceeded)
		counted := e.untilCron("kept", "counted the second run", func(c *wfv1.CronWorkflow) bool { return c.Status.Succeeded == 2 && len(c.Status.Active) == 0 })
		e.synced(r, counted) // a pass from that copy on is over, its pruning included
		if got := e.runNames("kept"); !slices.Contains(got, real[0]) || !slices.Contains(got, real[1]) {
			t.Errorf("runs = %v, want both real runs %v kept", got, real)
		}
		if got := harness.Metric(t, r.registry, "wfguard_cronworkflow_runs_pruned_total", nil); got != 0 {
			t.Errorf("wfguard_cronworkflow_runs_pruned_total = %v, want 0", got)
		}
		if got := r.ignored(); got != 2 {
			t.Errorf("wfguard_cronworkflow_runs_ignored_total = %v, want 2", got)
		}
		e.waitEvent("kept", cronworkflow.ReasonRunIgnored)
	})
}

// Found reviewing issue #44's fixes: status.active is the CronWorkflow writer's to fill (no status
// subresource), and a listed workflow was kept active and, with concurrencyPolicy Replace, terminated by the
// controller's own identity: whoever may create a CronWorkflow could stop another user's workflow, a patch
// they are refused. Entries that are not runs of the CronWorkflow are dropped, never terminated.
func TestAWorkflowListedInACronWorkflowsStatusIsNotTerminatedUnlessItIsItsRun(t *testing.T) {
	e := newEnv(t)
	defer e.release()
	r := e.startReconciler()
	victim := e.Submit(`
metadata: {name: victim}
spec:
  entrypoint: hold
  templates:
  - name: hold
    container: {image: busybox, command: [sh, -c, "true"]}
`)
	e.WaitFor(victim.Name, "running", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == wfv1.WorkflowRunning })
	mallory := versioned.NewForConfigOrDie(harness.Grant(t, cp.Config(), e.Namespace, "mallory",
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"cronworkflows"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"get"}}))
	cwf := &wfv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(cronManifest("replacer", "pass", "  concurrencyPolicy: Replace")), cwf); err != nil {
		t.Fatal(err)
	}
	cwf.Status.Active = []corev1.ObjectReference{{Kind: "Workflow", Name: victim.Name, Namespace: e.Namespace, UID: victim.UID}}
	if _, err := mallory.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Create(t.Context(), cwf, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CronWorkflow as mallory: %v", err)
	}
	e.tick(minute(1), r)
	e.waitRunPhase(runName("replacer", minute(1)), wfv1.WorkflowSucceeded)
	if got := r.runs("created"); got != 1 {
		t.Errorf("runs created = %v, want 1", got)
	}
	if got, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), victim.Name, metav1.GetOptions{}); err != nil || got.Spec.Shutdown != "" {
		t.Fatalf("the victim's spec.shutdown = %q (%v): the controller terminated a workflow that is not a run of the CronWorkflow", got.Spec.Shutdown, err)
	}
	if active := activeNames(e.cron("replacer")); slices.Contains(active, victim.Name) {
		t.Errorf("status.active = %v still lists the victim", active)
	}
	e.waitEvent("replacer", cronworkflow.ReasonRunIgnored)
}

// Found reviewing issue #44's fixes: a CronWorkflow whose write the API server refuses for good (its
// annotations pass the 256 KiB limit once the reconciler adds its own) was retried with backoff for ever,
// with log lines only. The refusal is now an Event on the CronWorkflow.
func TestACronWorkflowWhoseWriteIsRefusedForGoodSaysSo(t *testing.T) {
	e := newEnv(t)
	e.startReconciler()
	cwf := &wfv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(cronManifest("crowded", "pass", "")), cwf); err != nil {
		t.Fatal(err)
	}
	// Just under the API server's limit: the reconciler's own annotations take it over.
	cwf.Annotations = map[string]string{"example.com/notes": strings.Repeat("x", 256*1024-len("example.com/notes")-20)}
	if _, err := e.Argo.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Create(t.Context(), cwf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := e.waitEvent("crowded", cronworkflow.ReasonStatusNotStored)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "Too long") {
		t.Errorf("Event = %s %q, want a Warning quoting the API server's refusal", ev.Type, ev.Message)
	}
}
