package cronworkflow

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// concurrencyDecision is what a due run does given the runs still active.
type concurrencyDecision struct {
	start bool
	// terminateActive: the active runs are terminated first (Replace).
	terminateActive bool
	// policyApplied: the policy changed what happens (argo's cron policy metric counts these).
	policyApplied bool
}

// decideConcurrency applies spec.concurrencyPolicy to a due run while active runs are still running.
func decideConcurrency(policy wfv1.ConcurrencyPolicy, active int) (concurrencyDecision, error) {
	switch policy {
	case wfv1.AllowConcurrent, "":
		return concurrencyDecision{start: true}, nil
	case wfv1.ForbidConcurrent:
		if active > 0 {
			return concurrencyDecision{policyApplied: true}, nil
		}
		return concurrencyDecision{start: true}, nil
	case wfv1.ReplaceConcurrent:
		if active > 0 {
			return concurrencyDecision{start: true, terminateActive: true, policyApplied: true}, nil
		}
		return concurrencyDecision{start: true}, nil
	}
	return concurrencyDecision{}, fmt.Errorf("%q is not a valid concurrencyPolicy (Allow, Forbid or Replace)", policy)
}
