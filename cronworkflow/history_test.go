package cronworkflow

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func finished(name string, phase wfv1.WorkflowPhase, minute int) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: wfv1.WorkflowStatus{Phase: phase}}
	if minute >= 0 {
		wf.Status.FinishedAt = metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
	}
	return wf
}

func TestRunsBeyondHistory(t *testing.T) {
	limit := func(n int32) *int32 { return &n }
	runs := []*wfv1.Workflow{
		finished("s1", wfv1.WorkflowSucceeded, 1), finished("s2", wfv1.WorkflowSucceeded, 2),
		finished("s3", wfv1.WorkflowSucceeded, 3), finished("s4", wfv1.WorkflowSucceeded, 4),
		finished("f1", wfv1.WorkflowFailed, 1), finished("e2", wfv1.WorkflowError, 2),
		finished("running", wfv1.WorkflowRunning, -1), finished("pending", "", -1),
	}
	for _, tc := range []struct {
		name string
		spec wfv1.CronWorkflowSpec
		want []string
	}{
		{name: "argo's defaults keep 3 succeeded and 1 failed", want: []string{"f1", "s1"}},
		{name: "limits of 0 delete every completed run and no running one", spec: wfv1.CronWorkflowSpec{
			SuccessfulJobsHistoryLimit: limit(0), FailedJobsHistoryLimit: limit(0)}, want: []string{"e2", "f1", "s1", "s2", "s3", "s4"}},
		{name: "the most recently finished are kept", spec: wfv1.CronWorkflowSpec{
			SuccessfulJobsHistoryLimit: limit(1), FailedJobsHistoryLimit: limit(2)}, want: []string{"s1", "s2", "s3"}},
		{name: "a negative limit means the default", spec: wfv1.CronWorkflowSpec{
			SuccessfulJobsHistoryLimit: limit(-1), FailedJobsHistoryLimit: limit(-5)}, want: []string{"f1", "s1"}},
		{name: "limits above the count delete nothing", spec: wfv1.CronWorkflowSpec{
			SuccessfulJobsHistoryLimit: limit(10), FailedJobsHistoryLimit: limit(10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, wf := range runsBeyondHistory(runs, &tc.spec) {
				got = append(got, wf.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("pruned %v, want %v", got, tc.want)
			}
		})
	}
}
