package engine

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAFinishedWorkflowIsDueForDeletionByArgosTTLRules(t *testing.T) {
	finished := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	all := &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](10), SecondsAfterSuccess: ptr.To[int32](20), SecondsAfterFailure: ptr.To[int32](30)}
	for _, tc := range []struct {
		sentence string
		phase    wfv1.WorkflowPhase
		own      *wfv1.TTLStrategy
		stored   *wfv1.TTLStrategy // from a workflowTemplateRef
		finished time.Time
		want     time.Duration // after finished; -1 = none due
	}{
		{"a succeeded workflow uses secondsAfterSuccess", wfv1.WorkflowSucceeded, all, nil, finished, 20 * time.Second},
		{"a failed workflow uses secondsAfterFailure", wfv1.WorkflowFailed, all, nil, finished, 30 * time.Second},
		{"an errored workflow is not Failed to argo: secondsAfterCompletion", wfv1.WorkflowError, all, nil, finished, 10 * time.Second},
		{"without the phase's own field, secondsAfterCompletion", wfv1.WorkflowFailed, &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](5)}, nil, finished, 5 * time.Second},
		{"only another phase's field: never", wfv1.WorkflowFailed, &wfv1.TTLStrategy{SecondsAfterSuccess: ptr.To[int32](5)}, nil, finished, -1},
		{"zero seconds is due at once", wfv1.WorkflowSucceeded, &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](0)}, nil, finished, 0},
		{"a running workflow is never due", wfv1.WorkflowRunning, all, nil, time.Time{}, -1},
		{"no finish time is never due", wfv1.WorkflowSucceeded, all, nil, time.Time{}, -1},
		{"the workflowTemplateRef's strategy applies", wfv1.WorkflowSucceeded, nil, all, finished, 20 * time.Second},
		{"the workflow's own strategy wins over its template's", wfv1.WorkflowSucceeded, &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](1)}, all, finished, time.Second},
		{"no strategy is never due", wfv1.WorkflowSucceeded, nil, nil, finished, -1},
	} {
		wf := &wfv1.Workflow{Spec: wfv1.WorkflowSpec{TTLStrategy: tc.own}, Status: wfv1.WorkflowStatus{Phase: tc.phase, FinishedAt: metav1.NewTime(tc.finished)}}
		if tc.stored != nil {
			wf.Status.StoredWorkflowSpec = &wfv1.WorkflowSpec{TTLStrategy: tc.stored}
		}
		due, ok := TTLExpiry(wf)
		switch {
		case tc.want < 0 && ok:
			t.Errorf("%s: due at %s, want never", tc.sentence, due)
		case tc.want >= 0 && (!ok || !due.Equal(tc.finished.Add(tc.want))):
			t.Errorf("%s: due at %s (%v), want %s", tc.sentence, due, ok, tc.finished.Add(tc.want))
		}
	}
}
