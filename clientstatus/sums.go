package clientstatus

import (
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// The sums below are argo's workflow/progress.UpdateProgress and util/resource.UpdateResourceDurations
// (their tests check them against argo's functions on random node graphs), computed without argo's
// allocations: argo formats and parses a progress string and copies a node at every step, about 60
// allocations per node, which on every write of a 10,000-node fan-out cost 50 ms and 30 MB.

// executable is argo's list of the node types whose progress is their own rather than their descendants'.
func executable(t wfv1.NodeType) bool {
	switch t {
	case wfv1.NodeTypePod, wfv1.NodeTypeHTTP, wfv1.NodeTypePlugin, wfv1.NodeTypeContainer, wfv1.NodeTypeSuspend:
		return true
	}
	return false
}

// fraction is a progress as numbers: done of total.
type fraction struct{ done, total int64 }

func (f fraction) valid() bool { return f.done >= 0 && f.done <= f.total && f.total > 0 }

// fractionOf reads "N/M" as argo does (an unparsable number counts 0); ok only when valid.
func fractionOf(p wfv1.Progress) (fraction, bool) {
	n, m, found := strings.Cut(string(p), "/")
	if !found {
		return fraction{}, false
	}
	done, _ := strconv.ParseInt(n, 10, 64)
	total, _ := strconv.ParseInt(m, 10, 64)
	f := fraction{done, total}
	return f, f.valid()
}

// setProgress stores f as n's progress unless n already says it in those words; it returns n.
func setProgress(n wfv1.NodeStatus, f fraction, buf *[48]byte) (wfv1.NodeStatus, bool) {
	b := strconv.AppendInt(buf[:0], f.done, 10)
	b = strconv.AppendInt(append(b, '/'), f.total, 10)
	if string(b) == string(n.Progress) {
		return n, false
	}
	n.Progress = wfv1.Progress(b)
	return n, true
}

// startingProgress is an executable node's progress before it is summed: 0/1 without one (argo), and also
// for a pod node whose progress is not valid (argo's pod assessment) and for a progress without '/' (which
// argo's IsValid would panic on).
func startingProgress(n wfv1.NodeStatus) wfv1.Progress {
	if n.Progress == "" || !strings.Contains(string(n.Progress), "/") {
		return wfv1.ProgressDefault
	}
	if _, ok := fractionOf(n.Progress); !ok && n.Type == wfv1.NodeTypePod {
		return wfv1.ProgressDefault
	}
	return n.Progress
}

// updateProgress: an executable node's progress is its own, complete (M/M) once it succeeded, was skipped
// or omitted; status.progress sums the executable nodes' valid ones; any other node's is the sum of the
// valid progress of the executable nodes reachable through its children, each once, when that sum is valid.
func updateProgress(wf *wfv1.Workflow) {
	var buf [48]byte
	own := make(map[string]fraction, len(wf.Status.Nodes))
	var sum fraction
	for id, n := range wf.Status.Nodes {
		if !executable(n.Type) {
			continue
		}
		if p := startingProgress(n); p != n.Progress {
			n.Progress = p
			wf.Status.Nodes[id] = n
		}
		f, ok := fractionOf(n.Progress)
		if !ok {
			continue // argo leaves an invalid progress out of every sum
		}
		if n.Phase == wfv1.NodeSucceeded || n.Phase == wfv1.NodeSkipped || n.Phase == wfv1.NodeOmitted {
			f.done = f.total
			if done, changed := setProgress(n, f, &buf); changed {
				wf.Status.Nodes[id] = done
			}
		}
		own[id] = f
		sum = fraction{sum.done + f.done, sum.total + f.total}
	}
	wf.Status.Progress = wfv1.Progress(strconv.FormatInt(sum.done, 10) + "/" + strconv.FormatInt(sum.total, 10))
	w := newWalker(wf.Status.Nodes)
	for id, n := range wf.Status.Nodes {
		if executable(n.Type) {
			continue
		}
		var total fraction
		w.walk(n, func(childID string, _ wfv1.NodeType, _ wfv1.ResourcesDuration) {
			if f, ok := own[childID]; ok {
				total = fraction{total.done + f.done, total.total + f.total}
			}
		})
		if total.valid() {
			if summed, changed := setProgress(n, total, &buf); changed {
				wf.Status.Nodes[id] = summed
			}
		}
	}
}

// updateResourceDurations: status.resourcesDuration sums every pod node's, and each fulfilled node that is
// not a pod sums those of the pod nodes reachable through its children, each once.
func updateResourceDurations(wf *wfv1.Workflow) {
	total := wfv1.ResourcesDuration{}
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			addDurations(total, n.ResourcesDuration)
		}
	}
	wf.Status.ResourcesDuration = total
	w := newWalker(wf.Status.Nodes)
	scratch := wfv1.ResourcesDuration{}
	for id, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod || !n.Fulfilled() {
			continue
		}
		clear(scratch)
		w.walk(n, func(_ string, t wfv1.NodeType, d wfv1.ResourcesDuration) {
			if t == wfv1.NodeTypePod {
				addDurations(scratch, d)
			}
		})
		if !sameDurations(n.ResourcesDuration, scratch) {
			n.ResourcesDuration = make(wfv1.ResourcesDuration, len(scratch))
			addDurations(n.ResourcesDuration, scratch)
			wf.Status.Nodes[id] = n
		}
	}
}

func addDurations(into, d wfv1.ResourcesDuration) {
	for name, seconds := range d {
		into[name] += seconds
	}
}

// sameDurations: the same seconds for the same names (none and empty are the same: both encode as nothing).
func sameDurations(a, b wfv1.ResourcesDuration) bool {
	if len(a) != len(b) {
		return false
	}
	for name, seconds := range a {
		if other, ok := b[name]; !ok || other != seconds {
			return false
		}
	}
	return true
}

// walker visits the nodes reachable from a node through children, each once, as argo's sums do.
type walker struct {
	nodes   wfv1.Nodes
	visited map[string]bool
	stack   []string
}

func newWalker(nodes wfv1.Nodes) *walker { return &walker{nodes: nodes, visited: map[string]bool{}} }

// walk calls visit with the ID, type and resource durations of each node reachable from n (n itself only
// through a cycle); a child that is not a node is passed over. Only these go to visit: a node's address
// would put a copy of each on the heap.
func (w *walker) walk(n wfv1.NodeStatus, visit func(id string, t wfv1.NodeType, d wfv1.ResourcesDuration)) {
	clear(w.visited)
	w.stack = append(w.stack[:0], n.Children...)
	for len(w.stack) > 0 {
		id := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		if w.visited[id] {
			continue
		}
		w.visited[id] = true
		child, ok := w.nodes[id]
		if !ok {
			continue
		}
		visit(id, child.Type, child.ResourcesDuration)
		w.stack = append(w.stack, child.Children...)
	}
}
