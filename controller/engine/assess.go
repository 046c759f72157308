package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/taskresult"
)

// NeverStarted reports whether n is a pod node that never started: Pending without a start time, as argo's
// memoized resubmit (workflow/util.FormulateResubmitWorkflow) copies a failed pod node into the new
// workflow. Its pod was never created, so it cannot have been deleted; the execute phase creates it. Every
// pod node wfguard creates records its start.
func NeverStarted(n *wfv1.NodeStatus) bool {
	return n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodePending && n.StartedAt.IsZero()
}

// PodMissingGrace is how long a node may lack its pod in the cache before the pod counts as deleted: the
// informer can lag behind our own create.
const PodMissingGrace = 10 * time.Second

// WaitingForTaskResultPrefix starts the message of a node whose pod succeeded but whose result is incomplete.
const WaitingForTaskResultPrefix = "waiting for task result"

// AssessNodes is the assess phase: it maps each pod's state onto its node. A node whose pod succeeded
// stays Running until its task result is synced; a missing pod past the grace is "pod deleted".
func AssessNodes(p *Pass) {
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		// settled, not fulfilled: a daemoned node counts as done for its successors while its pod runs on.
		if n.Type != wfv1.NodeTypePod || settled(n) {
			continue
		}
		pod := p.Pods[id]
		switch {
		case pod != nil && pod.DeletionTimestamp != nil && !taskresult.PodEnded(pod):
			// Being deleted: the kubelet reports the final status within the grace period; past it, the
			// pod counts as deleted, so its finalizer can go and nothing waits on it.
			if p.Now.Before(pod.DeletionTimestamp.Time) {
				assessPod(p, n, pod)
				assessContainerNodes(p, n, pod)
				p.requeueBy(pod.DeletionTimestamp.Time)
				break
			}
			if !taskresult.Complete(p.Results[id]) {
				taskresult.OpenGate(n)
			}
			podDeleted(p, n)
		case pod != nil:
			assessPod(p, n, pod)
			assessContainerNodes(p, n, pod)
		case waitingForOldPod(n) || waitingForLock(n) || NeverStarted(n):
			// Its pod was never created: the execute phase creates it (waitForOldPod, rebuildNeverStarted).
		case n.Phase.Completed() || p.Now.Sub(n.StartedAt.Time) < PodMissingGrace || p.Unverified[id]:
			if !n.Phase.Completed() {
				p.requeueBy(n.StartedAt.Add(PodMissingGrace))
			}
		case taskresult.Complete(p.Results[id]):
			// The pod is gone but its executor finished reporting: its outputs are whole.
			podDeleted(p, n)
		default:
			taskresult.OpenGate(n) // a deleted pod reports nothing more
			podDeleted(p, n)
		}
		enforceResultWait(p, id)
	}
	taskresult.PruneWaits(p.Ext, p.WF)
}

// podDeleted errors a node whose pod is gone, and its containers' nodes (a containerSet's) with it.
func podDeleted(p *Pass, n *wfv1.NodeStatus) {
	p.markPhase(n, wfv1.NodeError, "pod deleted")
	markContainersDeleted(p, n)
}

// enforceResultWait applies taskresult.Judge to a node's wait: at expiry a succeeded pod's node becomes Error
// TaskResultTimeout, and a failed one keeps its failure without its outputs; before, the pass asks to be
// requeued when the bound says.
func enforceResultWait(p *Pass, id string) {
	n := p.nodeByID(id)
	if n == nil {
		return
	}
	verified := p.Pods[id] != nil && !p.ResultUnverified[id]
	v := taskresult.Judge(p.Ext, n, taskresult.Evidence{Template: p.templateOf(n), Result: p.Results[id], Verified: verified}, p.TaskResultTimeout, p.Now)
	if !v.RecheckAt.IsZero() {
		p.requeueBy(v.RecheckAt)
	}
	if !v.Expired {
		return
	}
	taskresult.OpenGate(n)
	if n.Phase == wfv1.NodeRunning {
		p.markPhase(n, wfv1.NodeError, v.Message)
		p.Events = append(p.Events, Event{Warning: true, Reason: ReasonTaskResultTimeout, Message: "Node " + n.Name + ": " + v.Message})
		return
	}
	timeout := p.TaskResultTimeout
	if timeout <= 0 {
		timeout = taskresult.DefaultTimeout
	}
	p.setNode(n)
	p.Events = append(p.Events, Event{Warning: true, Reason: ReasonTaskResultTimeout, Message: fmt.Sprintf(
		"Node %s: its pod failed and its task result did not complete within %s; it keeps its failure without outputs", n.Name, timeout)})
}

// waitingSince reads the start of an old-pod wait back from the node message.
func waitingSince(msg string) time.Time {
	_, rest, ok := strings.Cut(msg, "(since ")
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSuffix(rest, ")"))
	if err != nil {
		return time.Time{}
	}
	return t
}

func assessPod(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod) {
	before := *n.DeepCopy()
	if before.Phase.Completed() {
		// A completed node never goes back (a stale pod copy can show it Running): only the result gate
		// may still open, by the executor's own rules.
		if taskresult.CannotReport(pod) {
			taskresult.OpenGate(n)
			p.setNode(n)
		}
		return
	}
	n.HostNodeName = pod.Spec.NodeName
	if stoppingDaemon(n) && taskresult.PodEnded(pod) {
		// The exit code of a daemon the controller stopped is the kill's (143), not the template's: argo
		// ends the node before the pod exits and never records one.
		assessStoppedDaemon(p, n, pod, &before)
		return
	}
	if code := mainExitCode(pod); code != "" {
		if n.Outputs == nil {
			n.Outputs = &wfv1.Outputs{}
		}
		n.Outputs.ExitCode = &code
	}
	stored := false
	switch pod.Status.Phase {
	case corev1.PodPending, "":
		n.Phase = wfv1.NodePending
		n.Message = pendingReason(pod)
	case corev1.PodRunning:
		assessRunningPod(p, n, pod)
	case corev1.PodSucceeded:
		stored = assessSucceededPod(p, n, pod, &before)
	case corev1.PodFailed:
		stored = assessFailedPod(p, n, pod)
	}
	if !stored && !equalNode(&before, n) {
		p.setNode(n)
	}
}

// resultSynced tells whether the node's task result is in (a node from before the flag existed is).
func resultSynced(n *wfv1.NodeStatus) bool { return n.TaskResultSynced == nil || *n.TaskResultSynced }

func assessRunningPod(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod) {
	if n.Phase != wfv1.NodeRunning {
		n.Phase = wfv1.NodeRunning
	}
	if !strings.HasPrefix(n.Message, "Stopped with strategy") && n.Message != "Step exceeded its deadline" && n.Message != DaemonStoppedMessage {
		n.Message = ""
	}
	if n.Daemoned == nil && PodReady(pod) && isDaemon(p.templateOf(n)) {
		// Argo's daemoned: running and ready, so successors may start (see fulfilled); {{steps.X.ip}}.
		t := true
		n.Daemoned = &t
		n.PodIP = pod.Status.PodIP
	}
}

// assessSucceededPod ends the node of a succeeded pod once its result is in, and keeps it Running, waiting
// for the result, until then. stored: the node was stored.
func assessSucceededPod(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod, before *wfv1.NodeStatus) (stored bool) {
	n.Daemoned = nil
	if isDaemon(p.templateOf(n)) {
		// A daemon should run until its scope ends: one that exits by itself failed (argo's rule). The
		// gate stays closed until its result is in, like any failed pod's.
		p.setNode(n)
		p.markPhase(n, wfv1.NodeFailed, "")
		return true
	}
	if resultSynced(n) {
		succeedWithOutputs(p, n, pod)
		return true
	}
	waitedBefore := taskresult.Waiting(p.Ext, before)
	waitForResult(p, n, pod)
	if !waitedBefore {
		p.Events = append(p.Events, Event{Reason: ReasonNodeWaitingForTask,
			Message: fmt.Sprintf("Node %s: pod %s succeeded; waiting for its task result", n.Name, pod.Name)})
	}
	return false
}

// assessFailedPod ends the node of a failed pod with the failure's reason; a pod whose main and wait
// containers both exited 0 (a sidecar was killed) succeeded, and success still needs the result (I1).
func assessFailedPod(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod) (stored bool) {
	n.Daemoned = nil
	phase, msg := inferFailedReason(pod)
	if phase == wfv1.NodeSucceeded && !resultSynced(n) {
		waitForResult(p, n, pod)
		return false
	}
	if pod.Status.Reason == "DeadlineExceeded" && (strings.HasPrefix(n.Message, "Stopped with strategy") || n.Message == "Step exceeded its deadline") {
		msg = n.Message // we stopped it: keep why
	}
	if taskresult.CannotReport(pod) {
		// The wait container can report nothing more: argo's rules to stop waiting for the result.
		taskresult.OpenGate(n)
	}
	if phase == wfv1.NodeSucceeded {
		succeedWithOutputs(p, n, pod)
		return true
	}
	p.setNode(n)
	p.markPhase(n, phase, msg)
	return true
}

// waitForResult keeps a node whose pod ended Running until its task result is in; the persisted start of
// the wait wins over the pod's end.
func waitForResult(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod) {
	since := p.recordResultWait(n.ID, taskresult.PodFinishedAt(pod))
	n.Phase = wfv1.NodeRunning
	n.Message = fmt.Sprintf("%s (since %s)", WaitingForTaskResultPrefix, since.UTC().Format(time.RFC3339))
}

// MissingOutputsPrefix starts the message of a node whose pod succeeded but whose finalized result lacks
// declared outputs (argo's log line says "required outputs are not yet set"; here they never will be).
const MissingOutputsPrefix = "required outputs are not set"

// succeedWithOutputs ends a node whose pod succeeded and whose result is in: Succeeded with its declared
// defaults applied, or Error naming each declared output the finalized result lacks. The executor will
// report nothing more, so a successor could only run with the literal {{...outputs...}} reference (I8).
func succeedWithOutputs(p *Pass, n *wfv1.NodeStatus, pod *corev1.Pod) {
	tmpl := p.templateOf(n)
	if tmpl != nil && tmpl.Outputs.HasOutputs() {
		n.Outputs = taskresult.ApplyOutputDefaults(tmpl, n.Outputs.DeepCopy())
	}
	p.setNode(n)
	if missing := taskresult.MissingOutputs(tmpl, n.Outputs); len(missing) > 0 {
		msg := fmt.Sprintf("%s: the executor finalized the task result of pod %s without %s", MissingOutputsPrefix, pod.Name, strings.Join(missing, ", "))
		p.markPhase(n, wfv1.NodeError, msg)
		p.Events = append(p.Events, Event{Warning: true, Reason: ReasonMissingOutputs, Message: "Node " + n.Name + ": " + msg})
		return
	}
	p.markPhase(n, wfv1.NodeSucceeded, "")
}

func equalNode(a, b *wfv1.NodeStatus) bool {
	return a.Phase == b.Phase && a.Message == b.Message && a.HostNodeName == b.HostNodeName && a.PodIP == b.PodIP &&
		boolPtr(a.Daemoned) == boolPtr(b.Daemoned) &&
		exitCode(a) == exitCode(b) && boolPtr(a.TaskResultSynced) == boolPtr(b.TaskResultSynced)
}

func exitCode(n *wfv1.NodeStatus) string {
	if n.Outputs == nil || n.Outputs.ExitCode == nil {
		return ""
	}
	return *n.Outputs.ExitCode
}

func boolPtr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func mainExitCode(pod *corev1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == common.MainContainerName && s.State.Terminated != nil {
			return fmt.Sprint(s.State.Terminated.ExitCode)
		}
	}
	return ""
}

func pendingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Reason + ": " + c.Message // the most common reason a pod stays Pending
		}
	}
	if pod.Status.Message != "" {
		return pod.Status.Message
	}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			if w.Message != "" {
				return w.Reason + ": " + w.Message
			}
			return w.Reason
		}
	}
	return ""
}

// inferFailedReason picks one message for a failed pod, preferring init, then main, then wait, as argo does.
func inferFailedReason(pod *corev1.Pod) (wfv1.NodePhase, string) {
	if pod.Status.Message != "" {
		return wfv1.NodeFailed, pod.Status.Message
	}
	order := func(name string) int {
		switch name {
		case common.MainContainerName:
			return 1
		case common.WaitContainerName:
			return 2
		}
		return 3
	}
	ctrs := append([]corev1.ContainerStatus{}, pod.Status.ContainerStatuses...)
	sort.SliceStable(ctrs, func(i, j int) bool { return order(ctrs[i].Name) < order(ctrs[j].Name) })
	ctrs = append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), ctrs...)
	if len(ctrs) == 0 {
		return wfv1.NodeFailed, fmt.Sprintf("can't find failed message for pod %s namespace %s", pod.Name, pod.Namespace)
	}
	mainOK, waitOK := false, false
	for _, c := range ctrs {
		if w := c.State.Waiting; w != nil {
			return wfv1.NodeError, fmt.Sprintf("Pod failed before %s container starts due to %s: %s", c.Name, w.Reason, w.Message)
		}
		t := c.State.Terminated
		if t == nil {
			continue
		}
		if t.ExitCode == 0 {
			mainOK = mainOK || c.Name == common.MainContainerName
			waitOK = waitOK || c.Name == common.WaitContainerName
			continue
		}
		msg := fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
		if t.Message != "" {
			msg += ": " + t.Message
		}
		msg = c.Name + ": " + msg
		switch c.Name {
		case common.InitContainerName, common.WaitContainerName:
			return wfv1.NodeError, msg
		case common.MainContainerName:
			return wfv1.NodeFailed, msg
		default:
			if t.ExitCode != 137 && t.ExitCode != 143 {
				return wfv1.NodeFailed, msg
			}
		}
	}
	switch {
	case mainOK && waitOK:
		return wfv1.NodeSucceeded, ""
	case mainOK:
		return wfv1.NodeFailed, "pod failed: wait container did not complete successfully"
	case waitOK:
		return wfv1.NodeFailed, "pod failed: main container did not complete successfully"
	}
	return wfv1.NodeFailed, "pod failed: neither main nor wait container completed successfully"
}
