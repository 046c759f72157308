package clientstatus

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Update derives, on a pass that writes anyway, what argo derives from the nodes before it writes
// (persistUpdates): each newly fulfilled pod node's resource durations from its pod, the sums of resource
// durations and progress, and, unless the pass started the workflow (assessed false: argo assesses no pod
// on that pass), the PodRunning condition. All follow the nodes: a pass that changed no node changes none.
func Update(wf *wfv1.Workflow, pods map[string]*corev1.Pod, assessed bool) {
	podNodeDurations(wf, pods)
	updateResourceDurations(wf)
	updateProgress(wf)
	if assessed {
		setPodRunning(wf)
	}
}

// ClearDerived clears, in a copy of a status without its nodes, what Update derives: fields that follow
// the nodes, so comparing what two passes decided needs only the nodes.
func ClearDerived(s *wfv1.WorkflowStatus) {
	s.Progress, s.ResourcesDuration = "", nil
	s.Conditions = WithoutPodRunning(s.Conditions)
}
