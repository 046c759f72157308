package controller

import (
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/wfguard/wfguard/argometrics"
)

// ArgoMetrics hears what argo's own controller metric names report (package argometrics).
type ArgoMetrics interface {
	// QueueMetrics measures the workflow queue, named argometrics.WorkflowQueue as argo names it.
	QueueMetrics() workqueue.MetricsProvider
	WorkerBusy(queue string)
	WorkerFree(queue string)
	// OperationDone observes one reconcile pass; OperationPanicked counts one that panicked.
	OperationDone(d time.Duration)
	OperationPanicked()
	// WorkflowEntered and PodNodeChanged hear the phase changes of each persisted pass.
	WorkflowEntered(wf *wfv1.Workflow, from wfv1.WorkflowPhase)
	PodNodeChanged(namespace string, before, after argometrics.NodeState)
}

// passStart is what a pass's persisted changes are compared with for argo's metrics.
type passStart struct {
	phase    wfv1.WorkflowPhase
	podNodes map[string]argometrics.NodeState
}

func startOf(wf *wfv1.Workflow) passStart {
	s := passStart{phase: wf.Status.Phase, podNodes: map[string]argometrics.NodeState{}}
	for id, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			s.podNodes[id] = argometrics.NodeState{Phase: n.Phase, Message: n.Message}
		}
	}
	return s
}

// reportPhaseChanges tells argo's metrics what a persisted pass changed.
func (c *Controller) reportPhaseChanges(p *pass) {
	am := c.opts.ArgoMetrics
	if am == nil {
		return
	}
	if p.WF.Status.Phase != p.start.phase {
		am.WorkflowEntered(p.WF, p.start.phase)
	}
	for id, n := range p.WF.Status.Nodes {
		if n.Type != wfv1.NodeTypePod {
			continue
		}
		// A node created by this pass is Pending from its birth, which argo does not count as a change.
		before, existed := p.start.podNodes[id]
		if after := (argometrics.NodeState{Phase: n.Phase, Message: n.Message}); existed && before != after {
			am.PodNodeChanged(p.WF.Namespace, before, after)
		}
	}
}

// WorkflowPhaseCounts counts the cached workflows by status.phase (argo_workflows_gauge).
func (c *Controller) WorkflowPhaseCounts() map[string]int {
	counts := map[string]int{}
	for _, obj := range c.inf.workflows.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			counts[phase]++
		}
	}
	return counts
}

// PodRunningCounts counts the cached workflows by the status of their PodRunning condition
// (argo_workflows_workflow_condition), completed ones included, as argo's index counts them.
func (c *Controller) PodRunningCounts() map[string]int {
	counts := map[string]int{}
	for _, obj := range c.inf.workflows.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if status := podRunningStatus(u); status != "" {
				counts[status]++
			}
		}
	}
	return counts
}

// podRunningStatus is the status of u's PodRunning condition, "" without one; read in place, since a
// scrape walks every cached workflow.
func podRunningStatus(u *unstructured.Unstructured) string {
	status, _ := u.Object["status"].(map[string]any)
	conditions, _ := status["conditions"].([]any)
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == string(wfv1.ConditionTypePodRunning) {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// PodPhaseCounts counts the cached workflow pods by pod phase (argo_workflows_pods_gauge).
func (c *Controller) PodPhaseCounts() map[string]int {
	counts := map[string]int{}
	for _, obj := range c.inf.pods.GetStore().List() {
		if pod, ok := obj.(*corev1.Pod); ok {
			counts[string(pod.Status.Phase)]++
		}
	}
	return counts
}

// argoQueueMetrics is the workflow queue's metrics provider: argo's, or client-go's global one (a no-op unless set).
func argoQueueMetrics(am ArgoMetrics) workqueue.MetricsProvider {
	if am == nil {
		return nil
	}
	return am.QueueMetrics()
}
