package bench

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestWorkflowsStillRunningAreCountedAndOnlyACompletedFailureRefusesTheRun(t *testing.T) {
	names := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name           string
		phases         map[string]wfv1.WorkflowPhase
		wantUnfinished int
		wantRefused    bool
	}{
		{"every workflow succeeded", map[string]wfv1.WorkflowPhase{"a": wfv1.WorkflowSucceeded, "b": wfv1.WorkflowSucceeded, "c": wfv1.WorkflowSucceeded}, 0, false},
		{"one still running is unfinished, not failed", map[string]wfv1.WorkflowPhase{"a": wfv1.WorkflowSucceeded, "b": wfv1.WorkflowSucceeded}, 1, false},
		{"none seen completed", map[string]wfv1.WorkflowPhase{}, 3, false},
		{"a failed workflow refuses the run", map[string]wfv1.WorkflowPhase{"a": wfv1.WorkflowSucceeded, "b": wfv1.WorkflowFailed}, 1, true},
		{"an errored workflow refuses the run", map[string]wfv1.WorkflowPhase{"a": wfv1.WorkflowError, "b": wfv1.WorkflowSucceeded, "c": wfv1.WorkflowSucceeded}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observer{wfPhase: tc.phases}
			if got := obs.unfinished(names); got != tc.wantUnfinished {
				t.Errorf("unfinished = %d, want %d", got, tc.wantUnfinished)
			}
			if err := noneFailed(obs, names); (err != nil) != tc.wantRefused {
				t.Errorf("noneFailed = %v, want refused %v", err, tc.wantRefused)
			}
		})
	}
}
