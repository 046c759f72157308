package taskresult

import (
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
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
// counts from the first pass that saw the pod end.
func RecordWait(ext *extstatus.Extensions, id string, since time.Time) time.Time {
	if at, ok := ext.ResultWaits[id]; ok {
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
