package bench

import (
	"context"
	"errors"
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

func TestOnlyArgoStillRunningMayLeaveScaleWorkUnfinished(t *testing.T) {
	deadline := errors.New("waiting for 14 of 1000 workflows to complete: context deadline exceeded")
	for _, tc := range []struct {
		sentence       string
		controller     string
		waitErr        error
		parentErr      error
		exited         bool
		unfinished     int
		wantUnfinished int
		wantErr        bool
	}{
		{"every workflow finished in time", ControllerWFGuard, nil, nil, false, 0, 0, false},
		{"argo still running at the deadline leaves a figure", ControllerArgo, deadline, nil, false, 14, 14, false},
		{"wfguard, the subject under test, leaving work unfinished fails the run", ControllerWFGuard, deadline, nil, false, 14, 0, true},
		{"argo's process dying is a failure, not slowness", ControllerArgo, deadline, nil, true, 14, 0, true},
		{"a cancelled bench is a failure, whoever runs", ControllerArgo, context.Canceled, context.Canceled, false, 14, 0, true},
		{"a wait that failed with nothing unfinished is a failure", ControllerArgo, deadline, nil, false, 0, 0, true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got, err := finishOutcome(tc.controller, tc.waitErr, tc.parentErr, tc.exited, tc.unfinished)
			if got != tc.wantUnfinished || (err != nil) != tc.wantErr {
				t.Errorf("finishOutcome = %d, %v; want %d, error %v", got, err, tc.wantUnfinished, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, tc.waitErr) {
				t.Errorf("the failure %v does not carry the wait's error %v", err, tc.waitErr)
			}
		})
	}
}
