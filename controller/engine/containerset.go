package engine

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// A containerSet runs its containers in one pod (one Pod node, one task result); argo also shows each
// container as a Container node under the Pod node, named <pod node>.<container>, linked as the set's
// dependency graph and moved along by the pod's container statuses.

// ContainerDeletedMessage is a Container node's message once its pod is gone (argo's words).
const ContainerDeletedMessage = "container deleted"

// PodFailedWhilstContainerRunning is a Container node's message when its pod failed before it ended (argo's).
const PodFailedWhilstContainerRunning = "Pod Failed whilst container running"

// emissaryErrorExitCode is what the emissary exits with when it, not the user's process, fails: argo
// errors the Container node rather than failing it.
const emissaryErrorExitCode = 64

func containerNodeName(podNode, container string) string { return podNode + "." + container }

// addContainerNodes records a Pending Container node per container of set, bounded by the Pod node:
// containers without dependencies are the Pod node's children, the others their dependencies'. Argo adds
// them once the pod was created; here once it was built, and createPods forgets them with a pod that is
// never created. Nodes already there (a node that waited for an earlier workflow's pod) are kept.
func addContainerNodes(p *Pass, podNode *wfv1.NodeStatus, set *wfv1.ContainerSetTemplate, flag *wfv1.NodeFlag) {
	for _, c := range set.GetGraph() {
		name := containerNodeName(podNode.Name, c.Name)
		if p.node(name) != nil {
			continue
		}
		n := p.newNode(nodeAt{name, c.Name, podNode.TemplateName, podNode.ID}, wfv1.NodeTypeContainer, wfv1.NodePending, "")
		n.TemplateScope, n.NodeFlag = podNode.TemplateScope, flag
		p.setNode(n)
	}
	for _, c := range set.GetGraph() {
		child := p.WF.NodeID(containerNodeName(podNode.Name, c.Name))
		if len(c.Dependencies) == 0 {
			p.addChild(p.node(podNode.Name), child)
		}
		for _, dep := range c.Dependencies {
			if parent := p.node(containerNodeName(podNode.Name, dep)); parent != nil {
				p.addChild(parent, child)
			}
		}
	}
}

// forgetContainerNodes drops the Container nodes of a Pod node whose pod was never created: argo has
// none for such a pod.
func forgetContainerNodes(p *Pass, podNodeID string) {
	for id, n := range p.WF.Status.Nodes {
		if n.Type == wfv1.NodeTypeContainer && n.BoundaryID == podNodeID {
			p.forgetNode(id)
		}
	}
}

// assessContainerNodes moves each Container node of podNode by its container's status, as argo does:
// terminated 0 Succeeded, 64 (the emissary's own failure) Error, else Failed naming the exit; still
// running in a failed pod Failed; waiting Pending; running Running. A completed one never goes back.
func assessContainerNodes(p *Pass, podNode *wfv1.NodeStatus, pod *corev1.Pod) {
	for _, s := range pod.Status.ContainerStatuses {
		n := p.node(containerNodeName(podNode.Name, s.Name))
		if n == nil || n.Type != wfv1.NodeTypeContainer || n.Phase.Completed() {
			continue
		}
		phase, message := containerPhase(s, pod.Status.Phase, n.Message)
		if phase != "" {
			p.markPhase(n, phase, message)
		}
	}
}

// containerPhase is a Container node's phase and message for its container's status; "" leaves it.
func containerPhase(s corev1.ContainerStatus, podPhase corev1.PodPhase, message string) (wfv1.NodePhase, string) {
	switch {
	case s.State.Terminated != nil:
		t := s.State.Terminated
		exit := fmt.Sprintf("%s: %s (exit code %d): %s", s.Name, t.Reason, t.ExitCode, t.Message)
		switch t.ExitCode {
		case 0:
			return wfv1.NodeSucceeded, message
		case emissaryErrorExitCode:
			return wfv1.NodeError, exit
		}
		return wfv1.NodeFailed, exit
	case podPhase == corev1.PodFailed:
		return wfv1.NodeFailed, PodFailedWhilstContainerRunning
	case s.State.Waiting != nil:
		return wfv1.NodePending, message
	case s.State.Running != nil:
		return wfv1.NodeRunning, message
	}
	return "", message
}

// markContainersDeleted errors the unfinished Container nodes of a Pod node whose pod was deleted. Argo
// also errors the finished ones; a completed node never goes back here.
func markContainersDeleted(p *Pass, podNode *wfv1.NodeStatus) {
	for id, n := range p.WF.Status.Nodes {
		if n.Type == wfv1.NodeTypeContainer && n.BoundaryID == podNode.ID && !n.Phase.Completed() {
			p.markPhase(p.nodeByID(id), wfv1.NodeError, ContainerDeletedMessage)
		}
	}
}
