package cronworkflow

import (
	"sort"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Argo's defaults when the limits are unset (or negative).
const (
	defaultSuccessfulHistory = 3
	defaultFailedHistory     = 1
)

// historyLimit is limit when set and not negative, else def.
func historyLimit(limit *int32, def int) int {
	if limit != nil && *limit >= 0 {
		return int(*limit)
	}
	return def
}

// runsBeyondHistory are the completed runs to delete: per outcome (Succeeded; Failed or Error), all but the
// limit most recently finished. Runs still going are never pruned.
func runsBeyondHistory(runs []*wfv1.Workflow, spec *wfv1.CronWorkflowSpec) []*wfv1.Workflow {
	var succeeded, failed []*wfv1.Workflow
	for _, wf := range runs {
		switch {
		case !wf.Status.Fulfilled():
		case wf.Status.Successful():
			succeeded = append(succeeded, wf)
		default:
			failed = append(failed, wf)
		}
	}
	prune := oldestBeyond(succeeded, historyLimit(spec.SuccessfulJobsHistoryLimit, defaultSuccessfulHistory))
	return append(prune, oldestBeyond(failed, historyLimit(spec.FailedJobsHistoryLimit, defaultFailedHistory))...)
}

// oldestBeyond is runs minus the keep most recently finished (ties broken by name for a stable order).
func oldestBeyond(runs []*wfv1.Workflow, keep int) []*wfv1.Workflow {
	if len(runs) <= keep {
		return nil
	}
	sorted := append([]*wfv1.Workflow(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i].Status.FinishedAt.Time, sorted[j].Status.FinishedAt.Time
		if !a.Equal(b) {
			return a.After(b)
		}
		return sorted[i].Name > sorted[j].Name
	})
	return sorted[keep:]
}
