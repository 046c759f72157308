package chaos

import (
	"sort"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// runs splits each workflow's history into runs: a Retry takes a completed workflow back to Pending, and
// the nodes it removes run again under the same node IDs, pod and task result names. An invariant about a
// node holds per run of that node, or the first run's facts would vouch for the second's.
type runs struct {
	starts  map[string][]int64    // workflow UID → rv of each version that reopened it after completion
	removed map[resultKey][]int64 // (workflow UID, node ID) → rv of each version the node left status.nodes
}

func runsOf(versions []version) runs {
	r := runs{starts: map[string][]int64{}, removed: map[resultKey][]int64{}}
	prev := map[string]*wfv1.Workflow{}
	for _, v := range versions {
		uid := string(v.wf.UID)
		if before, ok := prev[uid]; ok {
			if before.Status.Phase.Completed() && !v.wf.Status.Phase.Completed() {
				r.starts[uid] = append(r.starts[uid], v.rv)
			}
			for id := range before.Status.Nodes {
				if _, still := v.wf.Status.Nodes[id]; !still {
					k := resultKey{uid, id}
					r.removed[k] = append(r.removed[k], v.rv)
				}
			}
		}
		prev[uid] = v.wf
	}
	return r
}

// runStart is the rv of the version that opened the workflow's run in progress at rv at (0: its first run).
func (r runs) runStart(uid string, at int64) int64 { return lastBefore(r.starts[uid], at) }

// nodeLife is the rv after which the node's current life began at rv at: its last removal by a Retry
// before at (0: never removed).
func (r runs) nodeLife(uid, id string, at int64) int64 {
	return lastBefore(r.removed[resultKey{uid, id}], at)
}

// lastRunStart is the rv that opened the workflow's final run (0: it ran once).
func (r runs) lastRunStart(uid string) int64 {
	s := r.starts[uid]
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// lastBefore is the greatest of the ascending rvs below at, or 0.
func lastBefore(rvs []int64, at int64) int64 {
	i := sort.Search(len(rvs), func(i int) bool { return rvs[i] >= at })
	if i == 0 {
		return 0
	}
	return rvs[i-1]
}

// within reports whether one of rvs lies in (after, upTo].
func within(rvs []int64, after, upTo int64) bool {
	for _, x := range rvs {
		if x > after && x <= upTo {
			return true
		}
	}
	return false
}
