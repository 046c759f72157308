package cronworkflow_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastUsedSchedule is argo's record of the schedule in force when a CronWorkflow last started a run.
const lastUsedSchedule = "cronworkflows.argoproj.io/last-used-schedule"

func TestACronWorkflowRunsOnSchedule(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	cwf := e.createCron(cronManifest("nightly", "pass", ""))

	e.synced(r, cwf)
	if c := e.cron("nightly"); c.Status.Phase != "" || c.Annotations[lastUsedSchedule] != "" {
		t.Errorf("before its first run: phase %q, %s %q; argo records neither until a run starts",
			c.Status.Phase, lastUsedSchedule, c.Annotations[lastUsedSchedule])
	}
	e.tick(minute(1), r)
	first := e.waitRun(runName("nightly", minute(1)))
	t.Run("the run carries argo's labels, annotation and owner reference", func(t *testing.T) {
		if got := first.Labels[common.LabelKeyCronWorkflow]; got != "nightly" {
			t.Errorf("label %s = %q, want nightly", common.LabelKeyCronWorkflow, got)
		}
		if got := first.Labels["team"]; got != "cron-tests" {
			t.Errorf("workflowMetadata label team = %q, want cron-tests", got)
		}
		if got := first.Annotations[common.AnnotationKeyCronWfScheduledTime]; got != minute(1).Format(time.RFC3339) {
			t.Errorf("annotation %s = %q, want %s", common.AnnotationKeyCronWfScheduledTime, got, minute(1).Format(time.RFC3339))
		}
		owner := metav1.GetControllerOf(first)
		if owner == nil || owner.Kind != "CronWorkflow" || owner.UID != cwf.UID {
			t.Errorf("controller owner = %+v, want CronWorkflow nightly (%s)", owner, cwf.UID)
		}
		if first.Spec.Entrypoint != "pass" {
			t.Errorf("entrypoint = %q, want the workflowSpec's pass", first.Spec.Entrypoint)
		}
	})
	e.waitRunPhase(first.Name, wfv1.WorkflowSucceeded)
	status := e.untilCron("nightly", "counted the first success", func(c *wfv1.CronWorkflow) bool {
		return c.Status.Succeeded == 1 && len(c.Status.Active) == 0
	})
	if status.Status.LastScheduledTime == nil || !status.Status.LastScheduledTime.Time.Equal(minute(1)) {
		t.Errorf("lastScheduledTime = %v, want %s", status.Status.LastScheduledTime, minute(1))
	}
	if status.Status.Phase != wfv1.ActivePhase {
		t.Errorf("phase = %q, want Active", status.Status.Phase)
	}
	if got := status.Annotations[lastUsedSchedule]; got != cwf.Spec.GetScheduleWithTimezoneString() {
		t.Errorf("%s = %q once a run started, want %q", lastUsedSchedule, got, cwf.Spec.GetScheduleWithTimezoneString())
	}

	e.tick(minute(2), r)
	e.waitRunPhase(runName("nightly", minute(2)), wfv1.WorkflowSucceeded)
	e.untilCron("nightly", "counted the second success", func(c *wfv1.CronWorkflow) bool { return c.Status.Succeeded == 2 })
	e.waitEvent("nightly", "RunStarted")
	if got := r.runs("created"); got != 2 {
		t.Errorf("wfguard_cronworkflow_runs_total{outcome=created} = %v, want 2", got)
	}
	if got := r.observer.count("Triggered nightly"); got != 2 {
		t.Errorf("observer heard Triggered %d times, want 2", got)
	}
	if got, want := e.runNames("nightly"), []string{runName("nightly", minute(1)), runName("nightly", minute(2))}; !slices.Equal(got, want) {
		t.Errorf("runs = %v, want %v", got, want)
	}
}

func TestForbidSkipsWhileARunIsActive(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	e.createCron(cronManifest("forbid", "hold", "  concurrencyPolicy: Forbid"))

	e.tick(minute(1), r)
	first := runName("forbid", minute(1))
	e.untilCron("forbid", "listed the first run as active", func(c *wfv1.CronWorkflow) bool {
		return slices.Equal(activeNames(c), []string{first})
	})
	e.tick(minute(2), r)
	e.until("Forbid skipped the second run", func(context.Context) bool { return r.runs("forbidden") == 1 })
	if _, ok := e.workflow(runName("forbid", minute(2))); ok {
		t.Fatalf("run %s was created while %s was active", runName("forbid", minute(2)), first)
	}
	if got := r.observer.count("ConcurrencyPolicyTriggered forbid Forbid"); got != 1 {
		t.Errorf("observer heard the Forbid policy %d times, want 1", got)
	}
	e.waitEvent("forbid", "RunSkipped")

	e.release()
	e.waitRunPhase(first, wfv1.WorkflowSucceeded)
	e.untilCron("forbid", "emptied active", func(c *wfv1.CronWorkflow) bool { return len(c.Status.Active) == 0 && c.Status.Succeeded == 1 })
	e.tick(minute(3), r)
	e.waitRun(runName("forbid", minute(3)))
}

func TestReplaceTerminatesTheActiveRun(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	e.createCron(cronManifest("replace", "hold", "  concurrencyPolicy: Replace"))
	t.Cleanup(e.release)

	e.tick(minute(1), r)
	first := runName("replace", minute(1))
	e.untilCron("replace", "listed the first run as active", func(c *wfv1.CronWorkflow) bool {
		return slices.Equal(activeNames(c), []string{first})
	})
	e.tick(minute(2), r)
	second := e.waitRun(runName("replace", minute(2)))
	old, _ := e.workflow(first)
	if old == nil || old.Spec.Shutdown != wfv1.ShutdownStrategyTerminate {
		t.Fatalf("the active run's spec.shutdown = %v, want Terminate", old)
	}
	e.waitRunPhase(first, wfv1.WorkflowFailed)
	e.untilCron("replace", "counted the terminated run failed, the new one active", func(c *wfv1.CronWorkflow) bool {
		return c.Status.Failed == 1 && slices.Equal(activeNames(c), []string{second.Name})
	})
	if got := r.observer.count("ConcurrencyPolicyTriggered replace Replace"); got != 1 {
		t.Errorf("observer heard the Replace policy %d times, want 1", got)
	}
	e.waitEvent("replace", "RunsReplaced")
}

func TestSuspendStopsRuns(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	e.createCron(cronManifest("paused", "pass", "  suspend: true"))

	e.tick(minute(1), r)
	e.until("the suspended run was skipped", func(context.Context) bool { return r.runs("suspended") == 1 })
	if got := e.runNames("paused"); len(got) != 0 {
		t.Fatalf("a suspended CronWorkflow started %v", got)
	}
	cwf := e.cron("paused")
	cwf.Spec.Suspend = false
	updated, err := e.Argo.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Update(t.Context(), cwf, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.synced(r, updated)
	e.tick(minute(2), r)
	e.waitRun(runName("paused", minute(2)))
	if got := e.runNames("paused"); !slices.Equal(got, []string{runName("paused", minute(2))}) {
		t.Errorf("runs = %v, want only the one after resuming", got)
	}
}

func TestHistoryLimitsDeleteTheOldestCompletedRuns(t *testing.T) {
	// Runs 2 and 3 fail, 1 and 4 succeed; one of each is kept.
	e := newEnv(t, runName("history", minute(2)), runName("history", minute(3)))
	r := e.startReconciler()
	e.createCron(cronManifest("history", "pass", "  successfulJobsHistoryLimit: 1\n  failedJobsHistoryLimit: 1"))
	for n := 1; n <= 4; n++ {
		e.tick(minute(n), r)
		e.untilCron("history", "counted run "+runName("history", minute(n)), func(c *wfv1.CronWorkflow) bool {
			return c.Status.Succeeded+c.Status.Failed == int64(n) && len(c.Status.Active) == 0
		})
	}
	want := []string{runName("history", minute(3)), runName("history", minute(4))}
	e.until("pruned to the latest success and the latest failure", func(context.Context) bool {
		return slices.Equal(e.runNames("history"), want)
	})
	if c := e.cron("history"); c.Status.Succeeded != 2 || c.Status.Failed != 2 {
		t.Errorf("succeeded %d failed %d, want 2 and 2", c.Status.Succeeded, c.Status.Failed)
	}
}

func TestAnInvalidSpecGetsTheSpecErrorCondition(t *testing.T) {
	for _, tc := range []struct {
		name, extra, schedules, entrypoint, want string
	}{
		{name: "a malformed schedule", schedules: `["61 * * * *"]`, want: `cron schedule "61 * * * *" is malformed`},
		{name: "an unknown timezone", schedules: `["* * * * *"]`, extra: "  timezone: Mars/Olympus", want: "Mars/Olympus"},
		{name: "an unknown concurrency policy", schedules: `["* * * * *"]`, extra: "  concurrencyPolicy: Sometimes", want: `"Sometimes" is not a valid concurrencyPolicy`},
		{name: "a workflowSpec argo's validation rejects", schedules: `["* * * * *"]`, entrypoint: "nope", want: "cannot validate Workflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.startReconciler()
			entrypoint := "pass"
			if tc.entrypoint != "" {
				entrypoint = tc.entrypoint
			}
			manifest := strings.Replace(cronManifest("bad", entrypoint, tc.extra), `["* * * * *"]`, tc.schedules, 1)
			e.createCron(manifest)
			cwf := e.untilCron("bad", "got the SpecError condition", func(c *wfv1.CronWorkflow) bool {
				for _, cond := range c.Status.Conditions {
					if cond.Type == wfv1.ConditionTypeSpecError && cond.Status == metav1.ConditionTrue {
						return true
					}
				}
				return false
			})
			if msg := cwf.Status.Conditions[0].Message; !strings.Contains(msg, tc.want) {
				t.Errorf("SpecError message = %q, want it to contain %q", msg, tc.want)
			}
			if ev := e.waitEvent("bad", "SpecError"); ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, tc.want) {
				t.Errorf("event = %s %q, want a Warning containing %q", ev.Type, ev.Message, tc.want)
			}
			if got := r.observer.count("SpecError bad"); got != 1 {
				t.Errorf("observer heard SpecError %d times, want 1", got)
			}
			e.synced(r, cwf)
			if again := e.cron("bad"); len(again.Status.Conditions) != 1 || again.Status.Conditions[0].Type != wfv1.ConditionTypeSpecError {
				t.Errorf("after the next reconcile the conditions are %+v, want the SpecError still", again.Status.Conditions)
			}
			if !r.NextWake().IsZero() {
				t.Errorf("an invalid CronWorkflow is scheduled at %s", r.NextWake())
			}
		})
	}
}

func TestStopStrategyStopsSchedulingOnceReached(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	e.createCron(cronManifest("once", "pass", "  stopStrategy:\n    expression: cronworkflow.succeeded >= 1"))
	e.tick(minute(1), r)
	e.waitRunPhase(runName("once", minute(1)), wfv1.WorkflowSucceeded)
	cwf := e.untilCron("once", "stopped", func(c *wfv1.CronWorkflow) bool { return c.Status.Phase == wfv1.StoppedPhase })
	if cwf.Labels[common.LabelKeyCronWorkflowCompleted] != "true" || cwf.Status.Succeeded != 1 {
		t.Errorf("labels %v succeeded %d, want %s=true and 1", cwf.Labels, cwf.Status.Succeeded, common.LabelKeyCronWorkflowCompleted)
	}
	e.waitEvent("once", "Stopped")
	e.synced(r, cwf)
	if !r.NextWake().IsZero() {
		t.Fatalf("a stopped CronWorkflow is still scheduled at %s", r.NextWake())
	}
}

func TestForbidStartsTheSkippedRunWithinStartingDeadlineSeconds(t *testing.T) {
	e := newEnv(t)
	r := e.startReconciler()
	e.createCron(cronManifest("catchup", "hold", "  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 30"))
	e.tick(minute(1), r)
	first := runName("catchup", minute(1))
	e.untilCron("catchup", "listed the first run as active", func(c *wfv1.CronWorkflow) bool {
		return slices.Equal(activeNames(c), []string{first})
	})
	e.tick(minute(2), r)
	e.until("Forbid skipped the second run", func(context.Context) bool { return r.runs("forbidden") == 1 })
	// The first run ends 10 s after the skipped tick: argo's rule starts that tick's run then.
	e.clock.SetTime(minute(2).Add(10 * time.Second))
	e.release()
	e.waitRun(runName("catchup", minute(2)))
	e.untilCron("catchup", "recorded the caught-up run", func(c *wfv1.CronWorkflow) bool {
		return c.Status.LastScheduledTime != nil && c.Status.LastScheduledTime.Time.Equal(minute(2)) && c.Status.Succeeded == 1
	})
}
