package podgc

import (
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// looks remember, per workflow UID, when its completed pods (out of the pod cache) must next be read from
// the API server: a pass reads them only when one of them may be due, so a running workflow costs one
// read per due delay, not one per pass. It is safe for concurrent use; the zero value is ready.
type looks struct {
	mu    sync.Mutex
	byUID map[types.UID]look
}

type look struct {
	// at is when a deletion left for later is due (zero: none is).
	at time.Time
	// sawFinish is the workflow finish whose pods were read: a workflow strategy makes every pod due at
	// the workflow's finish, a Retry's run included.
	sawFinish metav1.Time
}

// due reports whether this pass must read the workflow's completed pods: never read since the controller
// started (a restart forgot the deletions left for later) while a node is due, a deletion left for later
// is due, or the workflow finished since the last read and the strategy deletes at the workflow's finish.
func (l *looks) due(wf *wfv1.Workflow, now time.Time) bool {
	l.mu.Lock()
	st, seen := l.byUID[wf.UID]
	l.mu.Unlock()
	strategy := inForce(wf).GetStrategy()
	switch {
	case !seen:
		return anyDue(strategy, wf)
	case !st.at.IsZero() && !now.Before(st.at):
		return true
	case wf.Status.Phase.Completed() && workflowStrategy(strategy) && !st.sawFinish.Equal(&wf.Status.FinishedAt):
		return true
	}
	return false
}

// record notes a pass: whether it read the completed pods, the deletions it left for later, and whether
// any of its writes failed (then the next pass reads again). It returns when the next read is due (zero:
// none is).
func (l *looks) record(wf *wfv1.Workflow, now time.Time, looked bool, pending []time.Time, failed bool) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byUID == nil {
		l.byUID = map[types.UID]look{}
	}
	st, seen := l.byUID[wf.UID]
	if !seen && !looked && !failed {
		return time.Time{} // nothing due yet: the first due node reads
	}
	if looked {
		st = look{}
		if wf.Status.Phase.Completed() {
			st.sawFinish = wf.Status.FinishedAt
		}
	}
	for _, at := range pending {
		if st.at.IsZero() || at.Before(st.at) {
			st.at = at
		}
	}
	if failed {
		st.at = now
	}
	l.byUID[wf.UID] = st
	return st.at
}

func (l *looks) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byUID, uid)
}

func workflowStrategy(s wfv1.PodGCStrategy) bool {
	return s == wfv1.PodGCOnWorkflowCompletion || s == wfv1.PodGCOnWorkflowSuccess
}

// anyDue reports whether some node of wf is due under strategy.
func anyDue(strategy wfv1.PodGCStrategy, wf *wfv1.Workflow) bool {
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && due(strategy, wf, n) {
			return true
		}
	}
	return false
}
