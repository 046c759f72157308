package podgc

import (
	"fmt"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wfguard/wfguard/podfinalizer"
)

// AnnotationDeleteAfter records on a pod when podGC deletes it: durable, so a delayed deletion survives a
// controller restart (upstream keeps it only in memory).
const AnnotationDeleteAfter = "wfguard.io/delete-after"

// GCDecision is what podGC asks for one pod.
type GCDecision struct {
	Pod *corev1.Pod
	// At is when to delete; Mark says the time still has to be recorded on the pod.
	At   time.Time
	Mark bool
}

// StrategyAnnotation is the value podspec puts on pods: "<strategy>/<delay>".
func StrategyAnnotation(wf *wfv1.Workflow) string {
	gc := inForce(wf)
	if gc == nil || gc.GetStrategy() == wfv1.PodGCOnPodNone {
		return ""
	}
	return fmt.Sprintf("%s/%s", gc.GetStrategy(), gc.DeleteDelayDuration)
}

// inForce is the podGC the workflow runs with, as argo reads it from its execution spec: with a
// workflowTemplateRef, the merged spec stored when it started (status.storedWorkflowTemplateSpec: the
// workflow's own fields over the template's, over the ConfigMap's workflowDefaults); else its own spec,
// into which the workflowDefaults were merged when it started.
func inForce(wf *wfv1.Workflow) *wfv1.PodGC {
	if s := wf.Status.StoredWorkflowSpec; s != nil {
		return s.PodGC
	}
	return wf.Spec.PodGC
}

// PodsToDelete applies the workflow's podGC (inForce) to the persisted workflow: a pod is due once its node (or the
// workflow) is final as the strategy requires, its status finalizer released, and the delay passed. Pods
// are never deleted before their capture is persisted: a pod still holding our finalizer is not due.
// defaultDelay applies when the workflow's podGC sets no deleteDelayDuration (the controller ConfigMap's
// podGCDeleteDelayDuration); nil deletes at once.
func PodsToDelete(persisted *wfv1.Workflow, pods map[string]*corev1.Pod, now time.Time, defaultDelay *time.Duration) ([]GCDecision, error) {
	gc := inForce(persisted)
	if gc == nil || gc.GetStrategy() == wfv1.PodGCOnPodNone {
		return nil, nil
	}
	selector, err := gc.GetLabelSelector()
	if err != nil {
		return nil, fmt.Errorf("podGC.labelSelector: %w", err)
	}
	delay, err := gc.GetDeleteDelayDuration()
	if err != nil {
		return nil, fmt.Errorf("podGC.deleteDelayDuration: %w", err)
	}
	if delay < 0 && defaultDelay != nil { // negative: the workflow left it unset
		delay = *defaultDelay
	}
	var out []GCDecision
	for nodeID, pod := range pods {
		if pod.DeletionTimestamp != nil || slices.Contains(pod.Finalizers, podfinalizer.Finalizer) || !selected(selector, pod) {
			continue
		}
		node, ok := persisted.Status.Nodes[nodeID]
		if !ok || !due(gc.GetStrategy(), persisted, node) {
			continue
		}
		if v, marked := pod.Annotations[AnnotationDeleteAfter]; marked {
			at, err := time.Parse(time.RFC3339, v)
			if err == nil {
				out = append(out, GCDecision{Pod: pod, At: at})
				continue
			}
		}
		out = append(out, GCDecision{Pod: pod, At: now.Add(delay), Mark: delay > 0})
	}
	return out, nil
}

func due(strategy wfv1.PodGCStrategy, wf *wfv1.Workflow, node wfv1.NodeStatus) bool {
	switch strategy {
	// Final, not Fulfilled: a daemoned node counts as fulfilled while its pod still serves (argo too
	// collects pods by phase only).
	case wfv1.PodGCOnPodCompletion:
		return podfinalizer.Final(node)
	case wfv1.PodGCOnPodSuccess:
		return podfinalizer.Final(node) && node.Phase == wfv1.NodeSucceeded
	case wfv1.PodGCOnWorkflowCompletion:
		return wf.Status.Phase.Completed()
	case wfv1.PodGCOnWorkflowSuccess:
		return wf.Status.Phase == wfv1.WorkflowSucceeded
	}
	return false
}

func selected(s labels.Selector, pod *corev1.Pod) bool {
	// argo: a nil selector selects every pod (labels.Everything() from GetLabelSelector).
	return s == nil || s.Matches(labels.Set(pod.Labels))
}
