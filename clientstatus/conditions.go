package clientstatus

import (
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodRunning is the PodRunning condition's status for wf's nodes: True while one of its pod nodes runs.
// Argo upserts the condition on each pass that assesses pods (every pass but the one that starts the
// workflow), True when a pod node it changed that pass is Running; here it says whether any pod node is,
// so it changes only with a node's phase.
func PodRunning(wf *wfv1.Workflow) metav1.ConditionStatus {
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeRunning {
			return metav1.ConditionTrue
		}
	}
	return metav1.ConditionFalse
}

// setPodRunning upserts the PodRunning condition (argo's podReconciliation).
func setPodRunning(wf *wfv1.Workflow) {
	wf.Status.Conditions.UpsertCondition(wfv1.Condition{Type: wfv1.ConditionTypePodRunning, Status: PodRunning(wf)})
}

// MarkCompleted upserts Completed=True, as argo does when the workflow's phase becomes Succeeded, Failed
// or Error (markWorkflowPhase); a Retry sets it back to False.
// Argo's pass upserts PodRunning before it can complete the workflow, so a workflow with nodes that
// completes before any pass recorded PodRunning gets it first, in argo's order.
func MarkCompleted(wf *wfv1.Workflow) {
	podRunning := func(c wfv1.Condition) bool { return c.Type == wfv1.ConditionTypePodRunning }
	if len(wf.Status.Nodes) > 0 && !slices.ContainsFunc(wf.Status.Conditions, podRunning) {
		setPodRunning(wf)
	}
	wf.Status.Conditions.UpsertCondition(wfv1.Condition{Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionTrue})
}

// WithoutPodRunning is conditions without PodRunning: what a comparison of two passes' decisions looks
// at, the condition following the nodes' phases, which it compares already. It returns conditions itself
// when it has none.
func WithoutPodRunning(conditions wfv1.Conditions) wfv1.Conditions {
	for i, c := range conditions {
		if c.Type == wfv1.ConditionTypePodRunning {
			out := make(wfv1.Conditions, 0, len(conditions)-1)
			return append(append(out, conditions[:i]...), conditions[i+1:]...)
		}
	}
	return conditions
}
