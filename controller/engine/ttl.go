package engine

import (
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// TTLExpiry is when a completed workflow is due for deletion under its ttlStrategy, derived from the
// persisted status.finishedAt so it survives restarts. Argo's rules: secondsAfterFailure applies to a
// Failed workflow (not an Error one), secondsAfterSuccess to a Succeeded one, secondsAfterCompletion to
// any otherwise; the workflow's own strategy wins over its workflowTemplateRef's. ok is false when no
// deletion is due: the workflow is not completed, has no finish time, or no field applies.
func TTLExpiry(wf *wfv1.Workflow) (time.Time, bool) {
	s := wf.GetTTLStrategy()
	if s == nil || !wf.Status.Phase.Completed() || wf.Status.FinishedAt.IsZero() {
		return time.Time{}, false
	}
	var seconds *int32
	switch {
	case wf.Status.Phase == wfv1.WorkflowFailed && s.SecondsAfterFailure != nil:
		seconds = s.SecondsAfterFailure
	case wf.Status.Phase == wfv1.WorkflowSucceeded && s.SecondsAfterSuccess != nil:
		seconds = s.SecondsAfterSuccess
	case s.SecondsAfterCompletion != nil:
		seconds = s.SecondsAfterCompletion
	default:
		return time.Time{}, false
	}
	return wf.Status.FinishedAt.Add(time.Duration(*seconds) * time.Second), true
}
