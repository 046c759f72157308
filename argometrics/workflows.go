package argometrics

import (
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// phaseNew is argo's workflowtemplate_triggered_total phase for a workflow first seen.
const phaseNew = "New"

// WorkflowEntered counts a workflow whose persisted phase is now wf.Status.Phase, having been from
// (total_count; with a workflowTemplateRef also workflowtemplate_triggered_total, and at completion
// workflowtemplate_runtime). from is "" for a new workflow, whose deprecated fields are counted then
// (deprecated_feature).
func (m *Metrics) WorkflowEntered(wf *wfv1.Workflow, from wfv1.WorkflowPhase) {
	phase := metricPhase(wf.Status.Phase)
	m.workflowsEntered.WithLabelValues(phase, wf.Namespace).Inc()
	if from == "" {
		m.countDeprecatedSync(wf)
	}
	ref := wf.Spec.WorkflowTemplateRef
	if ref == nil {
		return
	}
	scope := strconv.FormatBool(ref.ClusterScope)
	if from == "" {
		m.templateRuns.WithLabelValues(ref.Name, wf.Namespace, scope, phaseNew).Inc()
	}
	m.templateRuns.WithLabelValues(ref.Name, wf.Namespace, scope, phase).Inc()
	if wf.Status.Phase.Completed() && !wf.Status.StartedAt.IsZero() && !wf.Status.FinishedAt.IsZero() {
		runtime := wf.Status.FinishedAt.Sub(wf.Status.StartedAt.Time)
		m.templateRuntime.WithLabelValues(ref.Name, wf.Namespace, scope).Observe(runtime.Seconds())
	}
}

// metricPhase is the phase label argo gives a workflow phase: anything but its five phases is Unknown.
func metricPhase(p wfv1.WorkflowPhase) string {
	switch p {
	case wfv1.WorkflowPending, wfv1.WorkflowRunning, wfv1.WorkflowSucceeded, wfv1.WorkflowFailed, wfv1.WorkflowError:
		return string(p)
	}
	return string(wfv1.WorkflowUnknown)
}

// NodeState is what the pod metrics compare of a pod node between the start and the end of a pass.
type NodeState struct {
	Phase   wfv1.NodePhase
	Message string
}

// PodNodeChanged counts a pod node of a persisted pass whose state went from before to after:
// pods_total_count when its phase changed; pod_pending_count when it became Pending or its pending reason
// changed (the message up to the first ':', PodInitializing not counted, as argo); pod_missing when its
// pod was found gone ("pod deleted"). wfguard only concludes that after its grace, so recently_started is
// always "false".
func (m *Metrics) PodNodeChanged(namespace string, before, after NodeState) {
	if before.Phase != after.Phase {
		m.podsEntered.WithLabelValues(string(after.Phase), namespace).Inc()
	}
	if after.Phase == wfv1.NodePending && (before.Phase != after.Phase || before.Message != after.Message) {
		if reason, _, _ := strings.Cut(after.Message, ":"); reason != pendingPodInitialized {
			m.podPending.WithLabelValues(reason, namespace).Inc()
		}
	}
	if after.Phase == wfv1.NodeError && after.Message == PodDeletedMessage && !before.Phase.Fulfilled(nil) {
		m.podMissing.WithLabelValues(string(before.Phase), recentlyStartedFalse).Inc()
	}
}

// PodDeletedMessage is the message wfguard gives a node whose pod is gone before it ended.
const PodDeletedMessage = "pod deleted"
