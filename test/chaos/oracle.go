package chaos

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// fate is what the seeded node did to one pod, as far as its workflow's outcome goes.
type fate string

const (
	fateHealthy    fate = "healthy"
	fateLateResult fate = "late result" // survivable: the result arrives within the task-result timeout
	fateExitCode   fate = "main exits 1"
	fateNoResult   fate = "no task result"
	fateEvicted    fate = "evicted"
	fateDeleted    fate = "deleted while running"
)

func fateOf(b simnode.Behavior) fate {
	switch {
	case b.ExitCode != 0:
		return fateExitCode
	case b.Fault.NoResult:
		return fateNoResult
	case b.Fault.Evict:
		return fateEvicted
	case b.Fault.DeleteWhileRunning:
		return fateDeleted
	case b.Fault.ResultDelay > 0:
		return fateLateResult
	}
	return fateHealthy
}

func (f fate) survivable() bool { return f == fateHealthy || f == fateLateResult }

// causeClass names the failure a node message reports.
type causeClass string

const (
	causeShutdown  causeClass = "stopped or terminated"
	causeUnclassed causeClass = "unclassified"
)

// messageOf says, per fate, how a node message that reports it reads; a shutdown has its own.
var messageOf = map[causeClass]*regexp.Regexp{
	causeClass(fateExitCode): regexp.MustCompile(`exit code 1\b`),
	causeClass(fateNoResult): regexp.MustCompile(`TaskResultTimeout|task result`),
	causeClass(fateEvicted):  regexp.MustCompile(`low on resource|Evicted`),
	causeClass(fateDeleted):  regexp.MustCompile(`pod deleted|exit code 143`),                             // a graceful delete SIGTERMs main
	causeShutdown:            regexp.MustCompile(`Stopped with strategy|workflow shutdown with strategy`), // the second: a node the shutdown never started
}

// classify reads the cause a failed node's message reports.
func classify(msg string) causeClass {
	for _, c := range []causeClass{causeShutdown, causeClass(fateExitCode), causeClass(fateNoResult), causeClass(fateEvicted), causeClass(fateDeleted)} {
		if messageOf[c].MatchString(msg) {
			return c
		}
	}
	return causeUnclassed
}

// outcomeReport is the oracle's verdict on one run: expected against got, and every spurious failure.
type outcomeReport struct {
	expected map[string]map[wfv1.WorkflowPhase]int // "Succeeded" or "Failed or Error" → final phase → count
	spurious map[causeClass][]string               // what the failed node's message said → "workflow/node: message"
	finish   []time.Duration                       // creation to finishedAt, per workflow
	retried  map[wfv1.WorkflowPhase]int            // final phase of each workflow a Retry ran again
	rerun    []string                              // per retried workflow: "name retry→finish"
}

// explain is the oracle (I11: no spurious failure). A workflow is judged on its final run: a Retry reopens
// a completed workflow, and only what happened since (the pods it ran or kept, a Stop or Terminate applied
// to the new run) explains how it ended; a shutdown of the first run explains nothing about the second. A
// workflow is expected to Succeed unless a pod of its final run was dealt an unsurvivable fate or a Stop or
// Terminate was applied to that run; every Failed or Error pod node must be explained by its own pod's fate
// or by the shutdown, and say so in its message. Everything else the run dealt (API errors, late, dropped or
// stale informer events, restarts, worker pauses, the retry's cleanup) is survivable.
func explain(versions []version, h history, final []*wfv1.Workflow, fateOfPod func(*corev1.Pod) fate) (outcomeReport, []violation) {
	r := outcomeReport{expected: map[string]map[wfv1.WorkflowPhase]int{}, spurious: map[causeClass][]string{}, retried: map[wfv1.WorkflowPhase]int{}}
	runs := runsOf(versions)
	shutdown := map[string]bool{}       // workflow UID → a Stop or Terminate was accepted in its final run
	retriedAt := map[string]time.Time{} // workflow UID → when its final run was reopened
	for _, v := range versions {
		uid := string(v.wf.UID)
		if v.rv >= runs.lastRunStart(uid) && (v.ext.Shutdown != "" || v.wf.Spec.Shutdown != "") {
			shutdown[uid] = true
		}
		if v.rv == runs.lastRunStart(uid) && v.ext.RetryCleanupSince != nil {
			retriedAt[uid] = v.ext.RetryCleanupSince.Time
		}
	}
	// (workflow UID, node ID) → the fate of the node's pod, of its final run's pods: those created since the
	// final run began, or whose node the final run kept. A node's pods share their name, hence their fate.
	fates := map[podKey]fate{}
	finalNodes := map[podKey]bool{}
	for _, wf := range final {
		for id := range wf.Status.Nodes {
			finalNodes[podKey{string(wf.UID), id}] = true
		}
	}
	for _, pod := range h.pods {
		k := podKey{pod.Labels[podspec.LabelWorkflowUID], pod.Annotations[common.AnnotationKeyNodeID]}
		if _, seen := fates[k]; seen || (rv(pod.ResourceVersion) < runs.lastRunStart(k.uid) && !finalNodes[k]) {
			continue
		}
		fates[k] = fateOfPod(pod)
	}
	var out []violation
	for _, wf := range final {
		uid := string(wf.UID)
		if runs.lastRunStart(uid) > 0 {
			r.retried[wf.Status.Phase]++
			if at, ok := retriedAt[uid]; ok && !wf.Status.FinishedAt.IsZero() {
				r.rerun = append(r.rerun, fmt.Sprintf("%s %s", wf.Name, wf.Status.FinishedAt.Sub(at).Round(100*time.Millisecond)))
			}
		}
		dealtBadly := false
		for k, f := range fates {
			if k.uid == uid && !f.survivable() {
				dealtBadly = true
			}
		}
		expect := "Succeeded"
		if dealtBadly || shutdown[uid] {
			expect = "Failed or Error"
		}
		if r.expected[expect] == nil {
			r.expected[expect] = map[wfv1.WorkflowPhase]int{}
		}
		r.expected[expect][wf.Status.Phase]++
		if !wf.Status.FinishedAt.IsZero() {
			r.finish = append(r.finish, wf.Status.FinishedAt.Sub(wf.CreationTimestamp.Time))
		}
		if wf.Status.Phase != wfv1.WorkflowFailed && wf.Status.Phase != wfv1.WorkflowError {
			continue
		}
		explained := false
		for _, id := range sortedNodeIDs(wf) {
			n := wf.Status.Nodes[id]
			if n.Type != wfv1.NodeTypePod || (n.Phase != wfv1.NodeFailed && n.Phase != wfv1.NodeError) {
				continue
			}
			f, hadPod := fates[podKey{uid, id}]
			said := classify(n.Message)
			switch {
			case shutdown[uid] && (said == causeShutdown || !hadPod || !f.survivable()):
				explained = true
			case hadPod && !f.survivable() && said == causeClass(f):
				explained = true
			default:
				what := fmt.Sprintf("workflow %s node %s %s: %q; its pod was dealt %q", wf.Name, n.Name, n.Phase, n.Message, dealtOrNone(f, hadPod))
				if shutdown[uid] {
					what += ", and a Stop or Terminate was applied"
				}
				r.spurious[said] = append(r.spurious[said], what)
				out = append(out, violation{"I11", what})
				explained = true // reported at the node; the workflow's failure needs no second line
			}
		}
		if !explained {
			// No pod node failed: the workflow-level message is all there is.
			if shutdown[uid] && classify(wf.Status.Message) == causeShutdown {
				continue
			}
			what := fmt.Sprintf("workflow %s %s with no failed pod node: %q", wf.Name, wf.Status.Phase, wf.Status.Message)
			said := classify(wf.Status.Message)
			r.spurious[said] = append(r.spurious[said], what)
			out = append(out, violation{"I11", what})
		}
	}
	return r, out
}

func dealtOrNone(f fate, hadPod bool) fate {
	if !hadPod {
		return "no pod"
	}
	return f
}

func sortedNodeIDs(wf *wfv1.Workflow) []string {
	ids := make([]string, 0, len(wf.Status.Nodes))
	for id := range wf.Status.Nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// String prints the report: expected against got, spurious failures by cause, time to finish.
func (r outcomeReport) String() string {
	var b strings.Builder
	b.WriteString("outcomes (expected → got):")
	for _, expect := range []string{"Succeeded", "Failed or Error"} {
		got := r.expected[expect]
		var parts []string
		for _, phase := range []wfv1.WorkflowPhase{wfv1.WorkflowSucceeded, wfv1.WorkflowFailed, wfv1.WorkflowError} {
			parts = append(parts, fmt.Sprintf("%s %d", phase, got[phase]))
		}
		fmt.Fprintf(&b, " %s → %s;", expect, strings.Join(parts, ", "))
	}
	total := 0
	for _, list := range r.spurious {
		total += len(list)
	}
	n := 0
	for _, c := range r.retried {
		n += c
	}
	fmt.Fprintf(&b, "\nretried workflows, judged on their final run: %d (final %s %d, %s %d, %s %d)", n,
		wfv1.WorkflowSucceeded, r.retried[wfv1.WorkflowSucceeded], wfv1.WorkflowFailed, r.retried[wfv1.WorkflowFailed], wfv1.WorkflowError, r.retried[wfv1.WorkflowError])
	if len(r.rerun) > 0 {
		sort.Strings(r.rerun)
		fmt.Fprintf(&b, "; retry to finish: %s", strings.Join(r.rerun, ", "))
	}
	fmt.Fprintf(&b, "\nspurious failures: %d", total)
	causes := make([]string, 0, len(r.spurious))
	for c := range r.spurious {
		causes = append(causes, string(c))
	}
	sort.Strings(causes)
	for _, c := range causes {
		fmt.Fprintf(&b, "\n  %s: %d", c, len(r.spurious[causeClass(c)]))
	}
	if len(r.finish) > 0 {
		d := slices.Clone(r.finish)
		slices.Sort(d)
		at := func(q float64) time.Duration {
			return d[min(len(d)-1, int(q*float64(len(d))))].Round(100 * time.Millisecond)
		}
		fmt.Fprintf(&b, "\ntime to finish (a retried workflow's from its creation): p50 %s, p95 %s, max %s", at(0.5), at(0.95), d[len(d)-1].Round(100*time.Millisecond))
	}
	return b.String()
}
