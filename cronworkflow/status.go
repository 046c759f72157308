package cronworkflow

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// validateSpec checks what the cron reconciler itself needs of a CronWorkflow (argo's cron checks); the
// workflowSpec is checked by Options.ValidateWorkflow.
func validateSpec(cwf *wfv1.CronWorkflow) (schedules, error) {
	if len(cwf.Name) > maxNameLength {
		return nil, fmt.Errorf("cron workflow name %q must not be more than %d characters long (currently %d)", cwf.Name, maxNameLength, len(cwf.Name))
	}
	if n := len(cwf.Spec.Schedules); n > maxSchedules {
		return nil, fmt.Errorf("%d schedules, more than the %d a CronWorkflow may have", n, maxSchedules)
	}
	parsed, err := parseSchedules(&cwf.Spec)
	if err != nil {
		return nil, err
	}
	if _, err := decideConcurrency(cwf.Spec.ConcurrencyPolicy, 0); err != nil {
		return nil, err
	}
	if d := cwf.Spec.StartingDeadlineSeconds; d != nil && *d < 0 {
		return nil, fmt.Errorf("startingDeadlineSeconds must not be negative, got %d", *d)
	}
	return parsed, nil
}

// maxSchedules bounds spec.schedules: every pass computes each one's ticks (argo sets no bound).
const maxSchedules = 100

// activeRef is the status.active entry for a run.
func activeRef(wf *wfv1.Workflow) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Workflow", APIVersion: wfv1.SchemeGroupVersion.String(), Name: wf.Name,
		Namespace: wf.Namespace, UID: wf.UID, ResourceVersion: wf.ResourceVersion}
}

// runLookup says what is known of an active run: found with its copy, or gone for sure.
type runLookup func(ref corev1.ObjectReference) (wf *wfv1.Workflow, gone bool)

// reconcileActive brings status.active up to date with the runs: a run still going that is missing is added;
// a listed run that completed is removed and counted (succeeded or failed) as argo does, one that is gone is
// removed uncounted. It reports whether any run completed (the stop strategy is then evaluated).
func reconcileActive(status *wfv1.CronWorkflowStatus, runs []*wfv1.Workflow, lookup runLookup) (completed bool) {
	byUID := map[types.UID]*wfv1.Workflow{}
	for _, wf := range runs {
		byUID[wf.UID] = wf
		if !wf.Status.Fulfilled() && !status.HasActiveUID(wf.UID) {
			status.Active = append(status.Active, activeRef(wf))
		}
	}
	var kept []corev1.ObjectReference
	for _, ref := range status.Active {
		wf, ok := byUID[ref.UID]
		if !ok {
			var gone bool
			if wf, gone = lookup(ref); gone {
				continue
			}
		}
		if wf == nil || !wf.Status.Fulfilled() {
			kept = append(kept, ref)
			continue
		}
		completed = true
		switch wf.Status.Phase {
		case wfv1.WorkflowSucceeded:
			status.Succeeded++
		case wfv1.WorkflowFailed, wfv1.WorkflowError:
			status.Failed++
		}
	}
	status.Active = kept
	return completed
}

// markStopped records that the stop strategy was reached: phase Stopped and argo's completed label.
func markStopped(cwf *wfv1.CronWorkflow) {
	cwf.Status.Phase = wfv1.StoppedPhase
	if cwf.Labels == nil {
		cwf.Labels = map[string]string{}
	}
	cwf.Labels[common.LabelKeyCronWorkflowCompleted] = "true"
}

// setCondition sets a True condition of the type with message.
func setCondition(status *wfv1.CronWorkflowStatus, t wfv1.ConditionType, message string) {
	status.Conditions.UpsertCondition(wfv1.Condition{Type: t, Status: metav1.ConditionTrue, Message: message})
}
