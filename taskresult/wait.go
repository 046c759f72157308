package taskresult

import (
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/extstatus"
)

// WaitStart is when node n began waiting for its result, from persisted status: the start recorded in
// status.resultWaits for a succeeded pod's node (Running, gate closed), or the finish of a failed pod's
// node. Zero: no wait recorded.
func WaitStart(ext *extstatus.Extensions, n *wfv1.NodeStatus) time.Time {
	switch {
	case n.Phase == wfv1.NodeRunning:
		if ext != nil {
			return ext.ResultWaits[n.ID].Time
		}
	case n.Phase.Completed():
		return n.FinishedAt.Time
	}
	return time.Time{}
}

// Waiting reports whether n is a succeeded pod's node with a recorded wait for its result.
func Waiting(ext *extstatus.Extensions, n *wfv1.NodeStatus) bool {
	if ext == nil || n.Phase != wfv1.NodeRunning {
		return false
	}
	_, ok := ext.ResultWaits[n.ID]
	return ok
}

// RecordWait records when node id began waiting for its result; an earlier record wins, so the bound
// counts from the first pass that saw the pod end. A record later than since (the pod's finish, zero when
// unknown) is not the controller's own — whoever wrote the status could postpone the bound with it — so the
// pod's finish replaces it.
func RecordWait(ext *extstatus.Extensions, id string, since time.Time) time.Time {
	if at, ok := ext.ResultWaits[id]; ok && (since.IsZero() || !at.After(since)) {
		return at.Time
	}
	if ext.ResultWaits == nil {
		ext.ResultWaits = map[string]metav1.Time{}
	}
	ext.ResultWaits[id] = metav1.NewTime(since.UTC().Truncate(time.Second))
	return ext.ResultWaits[id].Time
}

// PruneWaits drops the record of every node that no longer waits: its gate opened or it completed.
func PruneWaits(ext *extstatus.Extensions, wf *wfv1.Workflow) {
	if ext == nil {
		return
	}
	for id := range ext.ResultWaits {
		n, ok := wf.Status.Nodes[id]
		if !ok || n.Phase != wfv1.NodeRunning || Synced(&n) {
			delete(ext.ResultWaits, id)
		}
	}
	if len(ext.ResultWaits) == 0 {
		ext.ResultWaits = nil
	}
}

// ForgetWaits drops the recorded waits of the given nodes: a Retry removed them, so a node run again under
// the same ID starts its wait anew.
func ForgetWaits(ext *extstatus.Extensions, nodeIDs map[string]bool) {
	for id := range ext.ResultWaits {
		if nodeIDs[id] {
			delete(ext.ResultWaits, id)
		}
	}
}

// Verdict is the bound's decision on one waiting node in one pass.
type Verdict struct {
	// Expired: the gate opens without the result; Message says why for a succeeded pod's node.
	Expired bool
	Message string
	// RecheckAt is when the next pass should look again (zero: no wait, or expired).
	RecheckAt time.Time
}

// Evidence is what a pass knows of a waiting node's result.
type Evidence struct {
	// Template is the node's template and Result its result as read (nil if none): the timeout's message
	// names the outputs the result lacks.
	Template *wfv1.Template
	Result   *wfv1.WorkflowTaskResult
	// Verified: the node's own pod was seen and its result read on the API server this pass.
	Verified bool
}

// Judge applies the bound to node n's wait. The wait expires at its start plus timeout, but only on
// evidence — the node's own pod seen and its result read on the API server this pass (ev.Verified). A lagging
// cache or a failed read is not evidence that the executor never reported: such a wait goes on, bounded at
// twice the timeout. Before its deadline a wait asks to be looked at again when the cache has had its grace
// (a read past it is then due) and at the deadline.
func Judge(ext *extstatus.Extensions, n *wfv1.NodeStatus, ev Evidence, timeout time.Duration, now time.Time) Verdict {
	if Synced(n) {
		return Verdict{}
	}
	since := WaitStart(ext, n)
	if since.IsZero() {
		return Verdict{} // the pod has not ended: no wait yet
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var v Verdict
	soonest := func(t time.Time) {
		if v.RecheckAt.IsZero() || t.Before(v.RecheckAt) {
			v.RecheckAt = t
		}
	}
	if readAt := since.Add(DirectReadGrace); now.Before(readAt) {
		soonest(readAt)
	}
	if deadline := since.Add(timeout); now.Before(deadline) {
		soonest(deadline)
		return v
	}
	unverified := n.Phase == wfv1.NodeRunning && !ev.Verified
	if unverified && now.Before(since.Add(2*timeout)) {
		return Verdict{RecheckAt: now.Add(time.Second)}
	}
	v = Verdict{Expired: true}
	if n.Phase == wfv1.NodeRunning {
		v.Message = TimeoutMessage(ev.Template, ev.Result, timeout)
		if unverified {
			v.Message += fmt.Sprintf("; its result could not be read past the cache within %s", 2*timeout)
		}
	}
	return v
}

// CannotReport reports whether an ended pod's executor can report nothing more, so its node's gate opens
// without a result (argo's rules): its wait container failed, or it was evicted before the wait container
// ran.
func CannotReport(pod *corev1.Pod) bool {
	wait := waitContainer(pod)
	failed := wait != nil && wait.State.Terminated != nil && wait.State.Terminated.ExitCode != 0
	return failed || (pod.Status.Reason == "Evicted" && wait == nil)
}

func waitContainer(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == common.WaitContainerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
