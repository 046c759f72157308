package engine

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/taskresult"
)

// DaemonStoppedMessage is the message of a daemoned node whose scope (the steps or DAG that started it, or
// the workflow) completed: its pod is being stopped, and the node ends Succeeded, as argo marks it, once
// the pod has ended and its result is in.
const DaemonStoppedMessage = "daemon stopped: its scope completed"

// daemoned is argo's "daemoned": a daemon template's pod is running and ready, so its successors may go on.
func daemoned(n *wfv1.NodeStatus) bool { return n != nil && n.Daemoned != nil && *n.Daemoned }

// stoppingDaemon marks a daemon whose scope completed. Daemoned false (not nil) is the persisted marker:
// the message is replaced while the node waits for its result, the marker is not.
func stoppingDaemon(n *wfv1.NodeStatus) bool { return n != nil && n.Daemoned != nil && !*n.Daemoned }

// settled is the strict task-result gate, without the daemon exception: terminal and result synced.
func settled(n *wfv1.NodeStatus) bool { return n != nil && n.Phase.Fulfilled(n.TaskResultSynced) }

func isDaemon(t *wfv1.Template) bool { return t != nil && t.IsDaemon() }

// PodReady is argo's readiness of a daemon: running with every container ready.
func PodReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

// endScope stops the daemons a steps or DAG node started once that node has completed.
func (p *Pass) endScope(n *wfv1.NodeStatus, err error) (*wfv1.NodeStatus, error) {
	if err == nil && n != nil && n.Phase.Completed() {
		stopDaemons(p, n.ID, false)
	}
	return n, err
}

// stopDaemons marks the running daemons started in scope boundaryID (with all, every daemon of the
// workflow) for stopping; the pods are stopped by stopMarkedDaemons. It reports whether a stopped daemon
// of the scope has not settled yet: the workflow completes only after that.
func stopDaemons(p *Pass, boundaryID string, all bool) bool {
	pending := false
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		if !all && n.BoundaryID != boundaryID {
			continue
		}
		if daemoned(n) && !n.Phase.Completed() {
			stopped := false
			n.Daemoned = &stopped
			n.Message = DaemonStoppedMessage
			p.setNode(n)
		}
		if stoppingDaemon(n) && !settled(n) {
			pending = true
		}
	}
	return pending
}

// stopMarkedDaemons is the I/O of stopDaemons: it lowers the deadline of every marked daemon pod that
// still runs, so the kubelet ends it. Repeated each pass until the pod has ended (idempotent).
func (e *Engine) stopMarkedDaemons(ctx context.Context, p *Pass) error {
	for id, n := range p.WF.Status.Nodes {
		if !stoppingDaemon(&n) || n.Phase.Completed() {
			continue
		}
		pod := p.Pods[id]
		if pod == nil || taskresult.PodEnded(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds <= 1 {
			continue // already stopped; the kubelet ends it
		}
		if err := e.Pods.StopPod(ctx, pod); err != nil {
			return &apiError{fmt.Errorf("stopping daemon pod %s of node %s: %w", pod.Name, n.Name, err)}
		}
	}
	return nil
}

// assessStoppedDaemon maps the end of a stopped daemon's pod: killed at its scope's end is how a daemon
// ends well, so the node becomes Succeeded — but only once its result is complete (I1). Until then it
// waits like any succeeded pod, bounded by the task-result timeout.
func assessStoppedDaemon(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod, before *wfv1.NodeStatus) {
	if taskresult.Synced(n) {
		n.Daemoned = nil
		p.setNode(n)
		p.markPhase(n, wfv1.NodeSucceeded, "")
		return
	}
	if taskresult.Waiting(p.Ext, before) {
		return
	}
	since := p.recordResultWait(n.ID, taskresult.PodFinishedAt(pod))
	n.Phase = wfv1.NodeRunning
	n.Message = fmt.Sprintf("%s (since %s)", WaitingForTaskResultPrefix, since.UTC().Format(time.RFC3339))
	p.setNode(n)
	p.Events = append(p.Events, Event{Reason: ReasonNodeWaitingForTask,
		Message: fmt.Sprintf("Node %s: daemon pod %s stopped; waiting for its task result", n.Name, pod.Name)})
}

// A daemon template with a retryStrategy runs as a Retry node whose attempts are the daemon's pods. As in
// argo, the Retry node is daemoned once an attempt is: its dependants start then, and read the serving
// attempt's pod IP through it ({{steps.X.ip}}, {{tasks.X.ip}}). An attempt that ends on its own failed (a
// daemon runs until stopped), so the strategy starts the next one; as in argo the Retry node stays daemoned
// meanwhile (dependants already running are not failed), keeping the last address it served at rather than
// none, until the next attempt serves or the retries are exhausted. When the scope ends, the Retry node is
// stopped with its attempt and ends as argo marks a stopped daemon.

// daemonedRetry is a Retry node standing for a daemoned attempt.
func daemonedRetry(n *wfv1.NodeStatus) bool {
	return n != nil && n.Type == wfv1.NodeTypeRetry && daemoned(n)
}

// followDaemonAttempt makes a Retry node daemoned at the pod IP of its current attempt while that attempt is
// daemoned, and reports whether it is: then nothing else is to be decided for the Retry node now.
func followDaemonAttempt(p *Pass, n, last *wfv1.NodeStatus) bool {
	if last == nil || !daemoned(last) || last.Phase != wfv1.NodeRunning {
		return false
	}
	if !daemoned(n) || n.PodIP != last.PodIP || n.Phase != wfv1.NodeRunning {
		t := true
		n.Daemoned, n.PodIP, n.Phase = &t, last.PodIP, wfv1.NodeRunning
		p.setNode(n)
	}
	return true
}

// settleStoppedRetries ends each stopped daemon's Retry node once its last attempt has settled: like
// argo's stop of a daemoned node, it ends Succeeded, with the attempt's outputs.
func settleStoppedRetries(p *Pass) {
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		if n.Type != wfv1.NodeTypeRetry || !stoppingDaemon(n) || n.Phase.Completed() {
			continue
		}
		attempts := attemptsOf(p, n)
		if len(attempts) > 0 && !settled(attempts[len(attempts)-1]) {
			continue
		}
		if len(attempts) > 0 && attempts[len(attempts)-1].Outputs != nil {
			n.Outputs = attempts[len(attempts)-1].Outputs.DeepCopy()
		}
		n.Daemoned = nil
		p.setNode(n)
		p.markPhase(n, wfv1.NodeSucceeded, "")
	}
}
