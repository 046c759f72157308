package cronworkflow_test

import (
	"context"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestARestartAcrossAMissedScheduleHonoursStartingDeadlineSeconds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline string
		// downFor is how long after the missed 12:02 tick the new reconciler starts.
		downFor time.Duration
		wantRun bool
	}{
		{name: "a run missed 20 s ago starts within a 30 s deadline", deadline: "30", downFor: 20 * time.Second, wantRun: true},
		{name: "a run missed 20 s ago does not start with a 10 s deadline", deadline: "10", downFor: 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			first := e.startReconciler()
			e.createCron(cronManifest("restart", "pass", "  startingDeadlineSeconds: "+tc.deadline))
			e.tick(minute(1), first)
			e.waitRunPhase(runName("restart", minute(1)), wfv1.WorkflowSucceeded)
			e.untilCron("restart", "counted the first run", func(c *wfv1.CronWorkflow) bool { return c.Status.Succeeded == 1 })
			first.stop()

			// No reconciler runs at 12:02; the next one starts after it.
			e.clock.SetTime(minute(2).Add(tc.downFor))
			second := e.startReconciler()
			e.armed(minute(3), second) // its first pass decided the missed run
			missed := runName("restart", minute(2))
			if _, created := e.workflow(missed); created != tc.wantRun {
				t.Fatalf("missed run %s created = %v, want %v", missed, created, tc.wantRun)
			}
			if !tc.wantRun {
				return
			}
			e.untilCron("restart", "recorded the missed run", func(c *wfv1.CronWorkflow) bool {
				return c.Status.LastScheduledTime != nil && c.Status.LastScheduledTime.Time.Equal(minute(2))
			})
			e.until("the restarted reconciler counted the missed run created", func(context.Context) bool {
				return second.runs("created") == 1
			})
		})
	}
}

func TestTwoRacingReconcilersCreateARunOnce(t *testing.T) {
	e := newEnv(t)
	a, b := e.startReconciler(), e.startReconciler()
	e.createCron(cronManifest("race", "pass", ""))
	for n := 1; n <= 3; n++ {
		e.tick(minute(n), a, b)
		e.waitRun(runName("race", minute(n)))
	}
	e.armed(minute(4), a, b) // both decided every tick
	want := []string{runName("race", minute(1)), runName("race", minute(2)), runName("race", minute(3))}
	if got := e.runNames("race"); !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	// A run is counted once its pass's status write lands, which a conflict with the other reconciler can
	// retry after both are armed for the next tick.
	e.until("counting the three runs created", func(context.Context) bool { return a.runs("created")+b.runs("created") >= 3 })
	e.untilCron("race", "counted every run once", func(c *wfv1.CronWorkflow) bool {
		return c.Status.Succeeded == 3 && len(c.Status.Active) == 0
	})
	if created := a.runs("created") + b.runs("created"); created != 3 {
		t.Errorf("the two reconcilers created %v runs, want 3 (%v + %v)", created, a.runs("created"), b.runs("created"))
	}
}
