package cronworkflow

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWhenAndStopStrategy(t *testing.T) {
	cron := func(when, stop string, succeeded, failed int64, last bool) *wfv1.CronWorkflow {
		c := &wfv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
			Spec:   wfv1.CronWorkflowSpec{When: when},
			Status: wfv1.CronWorkflowStatus{Succeeded: succeeded, Failed: failed}}
		if stop != "" {
			c.Spec.StopStrategy = &wfv1.StopStrategy{Expression: stop}
		}
		if last {
			c.Status.LastScheduledTime = &metav1.Time{Time: t0}
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		cwf      *wfv1.CronWorkflow
		eval     func(*wfv1.CronWorkflow) (bool, error)
		want     bool
		wantErrs string
	}{
		{name: "an empty when allows", cwf: cron("", "", 0, 0, false), eval: whenAllows, want: true},
		{name: "a simple tag substitutes a string variable", cwf: cron("'{{cronworkflow.name}}' == 'nightly'", "", 0, 0, false), eval: whenAllows, want: true},
		{name: "an expression template reads the counts", cwf: cron("{{= cronworkflow.failed < 2 }}", "", 0, 1, false), eval: whenAllows, want: true},
		{name: "when false skips", cwf: cron("{{= cronworkflow.succeeded > 3 }}", "", 1, 0, false), eval: whenAllows, want: false},
		{name: "when with an expression template reads lastScheduledTime",
			cwf: cron("{{= cronworkflow.lastScheduledTime == nil }}", "", 0, 0, false), eval: whenAllows, want: true},
		{name: "a when that is not boolean is an error", cwf: cron("1 + 1", "", 0, 0, false), eval: whenAllows, wantErrs: "want true or false"},
		{name: "no stop strategy never stops", cwf: cron("", "", 9, 9, false), eval: stopReached, want: false},
		{name: "the stop strategy stops after one success", cwf: cron("", "cronworkflow.succeeded >= 1", 1, 0, false), eval: stopReached, want: true},
		{name: "the stop strategy holds off before three failures", cwf: cron("", "cronworkflow.failed >= 3", 0, 2, false), eval: stopReached, want: false},
		{name: "a broken stop expression is an error", cwf: cron("", "cronworkflow.failed >=", 0, 0, false), eval: stopReached, wantErrs: "stopStrategy.expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.eval(tc.cwf)
			if tc.wantErrs != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrs) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErrs)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
