package chaos

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podfinalizer"
)

// plan is what the test knows about what it submitted: each node's dependencies by node name, and each
// action's kind.
type plan struct {
	deps        map[string]map[string][]string // workflow name → node name → dependency node names
	actionKinds map[string]string              // action name → Suspend, Resume, Stop, Terminate, Retry
	// action name → UID of the workflow it was pinned to, seen completed Failed or Error when the Retry was sent
	retryTargets map[string]types.UID
	// bombs are the recursion bombs submitted (checkBombs judges them, the outcome oracle does not)
	bombs map[string]bool
}

// violation is one broken invariant with the evidence.
type violation struct {
	Invariant string
	Detail    string
}

func (v violation) String() string { return v.Invariant + ": " + v.Detail }

// version is one decoded workflow version.
type version struct {
	rv  int64
	wf  *wfv1.Workflow
	ext extstatus.Extensions
}

func decodeVersions(h history) ([]version, []violation) {
	var out []version
	var bad []violation
	for _, u := range h.workflows {
		wf, ext, err := extstatus.FromUnstructured(u)
		if err != nil {
			bad = append(bad, violation{"decode", fmt.Sprintf("workflow %s rv %s: %v", u.GetName(), u.GetResourceVersion(), err)})
			continue
		}
		out = append(out, version{rv: rv(u.GetResourceVersion()), wf: wf, ext: ext})
	}
	return out, bad
}

// check runs every invariant over the recorded history and the final objects.
func check(h history, p plan, final []*unstructured.Unstructured) []violation {
	versions, out := decodeVersions(h)
	resultDone := completedResults(h)
	r := runsOf(versions)
	out = append(out, checkI1(versions, resultDone, r)...)
	out = append(out, checkI2(h, p, resultDone, r)...)
	out = append(out, checkI3I4(versions, h, p, r)...)
	out = append(out, checkRetryOrder(h, p)...)
	out = append(out, checkI5(versions, h, r)...)
	out = append(out, checkI6(versions, h)...)
	out = append(out, checkI7(final)...)
	out = append(out, checkI8(h)...)
	return out
}

type resultKey struct{ owner, name string }

// completedResults maps (owner UID, result name = node ID) to the revisions at which each result object of
// that name (a retried node's is a new one) was first seen complete, ascending.
func completedResults(h history) map[resultKey][]int64 {
	out := map[resultKey][]int64{}
	seen := map[string]bool{} // result object UID
	for _, r := range h.results {
		if r.Labels[common.LabelKeyReportOutputsCompleted] != "true" || seen[string(r.UID)+"/"+r.Name] {
			continue
		}
		seen[string(r.UID)+"/"+r.Name] = true
		for _, o := range r.OwnerReferences {
			k := resultKey{string(o.UID), r.Name}
			out[k] = append(out[k], rv(r.ResourceVersion))
		}
	}
	return out
}

// I1: a pod node is Succeeded only if its own complete result was seen before that write, in the node's
// current life: a node a Retry removed needs its new run's result, not the previous run's.
func checkI1(versions []version, done map[resultKey][]int64, r runs) []violation {
	var out []violation
	reported := map[string]bool{}
	for _, v := range versions {
		uid := string(v.wf.UID)
		for id, n := range v.wf.Status.Nodes {
			if n.Type != wfv1.NodeTypePod || n.Phase != wfv1.NodeSucceeded {
				continue
			}
			life := r.nodeLife(uid, id, v.rv)
			if !within(done[resultKey{uid, id}], life, v.rv) && !reported[uid+id] {
				reported[uid+id] = true
				out = append(out, violation{"I1", fmt.Sprintf("workflow %s rv %d: node %s Succeeded before its complete result (results complete at %v, node's run since %d)",
					v.wf.Name, v.rv, n.Name, done[resultKey{uid, id}], life)})
			}
		}
	}
	return out
}

type podKey struct{ uid, node string }

// I2: a pod is created only after each dependency's pod Succeeded and its result completed, both in the
// dependency's current life (a dependency a Retry removed must have succeeded again). Every pod is checked,
// a retried node's included.
func checkI2(h history, p plan, done map[resultKey][]int64, r runs) []violation {
	var created []*corev1.Pod // the first version of each pod
	seen := map[string]bool{}
	succeeded := map[podKey][]int64{} // (workflow UID, node name) → rv each pod of it was first seen Succeeded
	won := map[string]bool{}
	nodeID := map[podKey]string{}
	for _, pod := range h.pods {
		k := podKey{pod.Labels[podspec.LabelWorkflowUID], pod.Annotations[common.AnnotationKeyNodeName]}
		if !seen[string(pod.UID)] {
			seen[string(pod.UID)] = true
			created = append(created, pod)
			nodeID[k] = pod.Annotations[common.AnnotationKeyNodeID]
		}
		if !won[string(pod.UID)] && pod.Status.Phase == corev1.PodSucceeded {
			won[string(pod.UID)] = true
			succeeded[k] = append(succeeded[k], rv(pod.ResourceVersion))
		}
	}
	var out []violation
	for _, pod := range created {
		k := podKey{pod.Labels[podspec.LabelWorkflowUID], pod.Annotations[common.AnnotationKeyNodeName]}
		deps := p.deps[pod.Labels[common.LabelKeyWorkflow]][k.node]
		at := rv(pod.ResourceVersion)
		for _, d := range deps {
			dk := podKey{k.uid, d}
			life := r.nodeLife(k.uid, nodeID[dk], at)
			podOK := within(succeeded[dk], life, at)
			resultOK := within(done[resultKey{k.uid, nodeID[dk]}], life, at)
			if !podOK || !resultOK {
				out = append(out, violation{"I2", fmt.Sprintf("pod %s (%s) created at %d before dependency %s was fulfilled (pods Succeeded at %v, results complete at %v, dependency's run since %d)",
					pod.Name, k.node, at, d, succeeded[dk], done[resultKey{k.uid, nodeID[dk]}], life)})
			}
		}
	}
	return out
}

// I3 and I4: every action ends in exactly one terminal phase and keeps it, the one its write-ahead record
// holds; the record appears in one contiguous run of workflow versions, and the version that first records
// it carries its effect. A Retry's effect is a completed Failed or Error workflow put back to Pending with
// its cleanup open; a workflow reopens after completion only in the write that records a Retry (applied at
// most once: a replay is no second reopening).
func checkI3I4(versions []version, h history, p plan, r runs) []violation {
	var out []violation
	terminal := map[string]v1alpha1.ActionPhase{}
	last := map[string]*v1alpha1.WorkflowAction{}
	for _, a := range h.actions {
		last[a.Name] = a
		if t, ok := terminal[a.Name]; ok && a.Status.Phase != t {
			out = append(out, violation{"I3", fmt.Sprintf("action %s went from terminal %s to %s", a.Name, t, a.Status.Phase)})
		}
		if a.Status.Terminal() {
			if _, ok := terminal[a.Name]; !ok {
				terminal[a.Name] = a.Status.Phase
			}
		}
	}
	for name := range p.actionKinds {
		a, ok := last[name]
		if !ok || !a.Status.Terminal() {
			out = append(out, violation{"I3", fmt.Sprintf("action %s never reached a terminal phase (last %v)", name, phaseOf(a))})
		}
	}
	recorded := map[string]string{}   // action name → the outcome its record holds
	recordedBy := map[string]string{} // action name → the UID of the workflow that holds the record
	for _, v := range versions {
		for _, rec := range v.ext.AppliedActions {
			recorded[rec.Name] = rec.Outcome
			recordedBy[rec.Name] = string(v.wf.UID)
		}
	}
	for name, outcome := range recorded {
		if recordLost(h, last[name], recordedBy[name]) {
			continue
		}
		if a, ok := terminal[name]; ok && string(a) != outcome {
			out = append(out, violation{"I3", fmt.Sprintf("action %s reported %s (%s: %s) but its record says %s", name, a, last[name].Status.Reason, last[name].Status.Message, outcome)})
		}
	}
	prev := map[string]version{}
	// Per workflow UID, walk versions in order and track when each record is present.
	type span struct {
		present, ended bool
	}
	spans := map[string]map[string]*span{}
	for _, v := range versions {
		uid := string(v.wf.UID)
		if spans[uid] == nil {
			spans[uid] = map[string]*span{}
		}
		now := map[string]bool{}
		var firstHere []extstatus.AppliedAction
		for _, rec := range v.ext.AppliedActions {
			now[rec.Name] = true
			s := spans[uid][rec.Name]
			if s == nil {
				s = &span{}
				spans[uid][rec.Name] = s
			}
			if s.ended {
				out = append(out, violation{"I3", fmt.Sprintf("workflow %s rv %d: action %s recorded again after its record was pruned (applied twice?)", v.wf.Name, v.rv, rec.Name)})
			}
			if !s.present {
				firstHere = append(firstHere, rec)
			}
			s.present = true
		}
		for name, s := range spans[uid] {
			if s.present && !now[name] {
				s.present, s.ended = false, true
			}
		}
		before, seenBefore := prev[uid]
		prev[uid] = v
		retried := false
		for i, rec := range firstHere {
			if rec.Outcome != string(v1alpha1.PhaseSucceeded) {
				continue
			}
			switch p.actionKinds[rec.Name] {
			case v1alpha1.ActionRetry:
				retried = true
				wasFailed := seenBefore && (before.wf.Status.Phase == wfv1.WorkflowFailed || before.wf.Status.Phase == wfv1.WorkflowError)
				if !wasFailed || v.wf.Status.Phase != wfv1.WorkflowPending || v.ext.RetryCleanupSince == nil {
					out = append(out, violation{"I4", fmt.Sprintf("workflow %s rv %d: %s recorded applied with the workflow %s (cleanup since %v), from %s",
						v.wf.Name, v.rv, rec.Name, v.wf.Status.Phase, v.ext.RetryCleanupSince, phaseBefore(before, seenBefore))})
				}
			case v1alpha1.ActionStop, v1alpha1.ActionTerminate:
				if v.ext.Shutdown == "" && v.wf.Spec.Shutdown == "" {
					out = append(out, violation{"I4", fmt.Sprintf("workflow %s rv %d: %s recorded without its shutdown", v.wf.Name, v.rv, rec.Name)})
				}
			case v1alpha1.ActionSuspend:
				resumedToo := slices.ContainsFunc(firstHere[i+1:], func(r extstatus.AppliedAction) bool {
					return p.actionKinds[r.Name] == v1alpha1.ActionResume
				})
				suspended := v.ext.Suspended != nil && *v.ext.Suspended
				if !suspended && !resumedToo && !v.wf.Status.Phase.Completed() {
					out = append(out, violation{"I4", fmt.Sprintf("workflow %s rv %d: %s recorded without the workflow suspended", v.wf.Name, v.rv, rec.Name)})
				}
			}
		}
		if !retried && slices.Contains(r.starts[uid], v.rv) {
			out = append(out, violation{"I3", fmt.Sprintf("workflow %s rv %d: reopened from %s to %s without a newly recorded Retry (a Retry applied twice, or an effect without its record)",
				v.wf.Name, v.rv, before.wf.Status.Phase, phaseOrNone(v.wf.Status.Phase))})
		}
	}
	return out
}

// recordLost reports whether an action's record went with its workflow before any controller could report
// it: the workflow was deleted before the action's outcome was written, and the action failed
// WorkflowNotFound. A controller that watched the deletion reports the record from it; one that was down
// while the workflow was deleted (a crash between the record and the outcome, then the deletion) cannot
// know the record existed (docs/actions.md). This check cannot tell the two apart: an e2e test covers the first.
func recordLost(h history, a *v1alpha1.WorkflowAction, uid string) bool {
	gone, deleted := h.deleted[uid]
	return a != nil && deleted && a.Status.Phase == v1alpha1.PhaseFailed && a.Status.Reason == actions.ReasonWorkflowNotFound &&
		gone < rv(a.ResourceVersion)
}

// I3, in order: a Retry sent to a workflow completed Failed or Error applies, unless a Retry before it in the
// controller's order (creation time, then name) applied to the same workflow first, or the workflow is gone.
func checkRetryOrder(h history, p plan) []violation {
	last := map[string]*v1alpha1.WorkflowAction{}
	for _, a := range h.actions {
		last[a.Name] = a
	}
	var list []*v1alpha1.WorkflowAction
	for _, a := range last {
		if p.actionKinds[a.Name] == v1alpha1.ActionRetry {
			list = append(list, a)
		}
	}
	actions.Sort(list)
	var out []violation
	appliedTo := map[string]bool{} // workflow name → an earlier Retry applied
	for _, a := range list {
		applied := a.Status.Phase == v1alpha1.PhaseSucceeded
		uid, targeted := p.retryTargets[a.Name]
		_, gone := h.deleted[string(uid)]
		switch {
		case !targeted || applied:
		case a.Status.Reason == actions.ReasonWorkflowNotCompleted && appliedTo[a.Spec.WorkflowRef.Name]:
		case a.Status.Reason == actions.ReasonWorkflowNotFound && gone:
		default:
			out = append(out, violation{"I3", fmt.Sprintf("Retry %s sent to workflow %s (%s) completed Failed or Error, with no Retry applied before it, ended %s %s: %s",
				a.Name, a.Spec.WorkflowRef.Name, uid, a.Status.Phase, a.Status.Reason, a.Status.Message)})
		}
		appliedTo[a.Spec.WorkflowRef.Name] = appliedTo[a.Spec.WorkflowRef.Name] || applied
	}
	return out
}

func phaseBefore(before version, seen bool) string {
	if !seen {
		return "no earlier version"
	}
	return string(phaseOrNone(before.wf.Status.Phase))
}

func phaseOrNone(p wfv1.WorkflowPhase) wfv1.WorkflowPhase {
	if p == "" {
		return "(none)"
	}
	return p
}

func phaseOf(a *v1alpha1.WorkflowAction) string {
	if a == nil {
		return "never seen"
	}
	return string(a.Status.Phase)
}

// I5: a pod loses the status finalizer only after its node's final state is stored (or its workflow is
// completed or gone), in the pod's own run: a retried node's new pod is not vouched for by the previous
// run's completion.
func checkI5(versions []version, h history, r runs) []violation {
	byUID := map[string][]version{}
	for _, v := range versions {
		byUID[string(v.wf.UID)] = append(byUID[string(v.wf.UID)], v)
	}
	had := map[string]bool{}
	created := map[string]int64{} // pod UID → rv of its first version
	var out []violation
	for _, pod := range h.pods {
		if _, ok := created[string(pod.UID)]; !ok {
			created[string(pod.UID)] = rv(pod.ResourceVersion)
		}
		holds := slices.Contains(pod.Finalizers, podfinalizer.Finalizer)
		if holds {
			had[string(pod.UID)] = true
			continue
		}
		if !had[string(pod.UID)] {
			continue
		}
		delete(had, string(pod.UID)) // the release event: check once
		at := rv(pod.ResourceVersion)
		uid := pod.Labels[podspec.LabelWorkflowUID]
		if gone, ok := h.deleted[uid]; ok && gone < at {
			continue
		}
		id := pod.Annotations[common.AnnotationKeyNodeID]
		run := r.runStart(uid, created[string(pod.UID)])
		ok := false
		for _, v := range byUID[uid] {
			if v.rv >= at {
				break
			}
			if v.rv < run {
				continue
			}
			if n, found := v.wf.Status.Nodes[id]; v.wf.Status.Phase.Completed() || (found && n.Fulfilled()) {
				ok = true
			}
		}
		if !ok {
			out = append(out, violation{"I5", fmt.Sprintf("pod %s released at %d before its node %s's final state was stored", pod.Name, at, id)})
		}
	}
	return out
}

// I6: every node of a workflow names only pods of that workflow's UID.
func checkI6(versions []version, h history) []violation {
	podUID := map[string]string{} // pod name → workflow UID label
	for _, pod := range h.pods {
		podUID[pod.Name] = pod.Labels[podspec.LabelWorkflowUID]
	}
	var out []violation
	reported := map[string]bool{}
	for _, v := range versions {
		for _, n := range v.wf.Status.Nodes {
			if n.Type != wfv1.NodeTypePod {
				continue
			}
			name := podspec.PodName(v.wf.Name, n.Name, n.TemplateName, n.ID)
			if owner, ok := podUID[name]; ok && owner != string(v.wf.UID) && !reported[name+string(v.wf.UID)] {
				reported[name+string(v.wf.UID)] = true
				// A same-named pod of an older workflow may exist; the node must not have taken its outcome.
				if n.Phase == wfv1.NodeSucceeded {
					out = append(out, violation{"I6", fmt.Sprintf("workflow %s (%s) node %s Succeeded while its pod name belongs to workflow UID %s", v.wf.Name, v.wf.UID, n.Name, owner)})
				}
			}
		}
	}
	return out
}

// I7: only the controller writes workflow status (field ownership on the server).
func checkI7(final []*unstructured.Unstructured) []violation {
	var out []violation
	for _, u := range final {
		for _, mf := range u.GetManagedFields() {
			if mf.FieldsV1 == nil || mf.Manager == "wfguard-controller" {
				continue
			}
			if containsStatus(mf.FieldsV1.Raw) {
				out = append(out, violation{"I7", fmt.Sprintf("workflow %s: status written by %q", u.GetName(), mf.Manager)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Detail < out[j].Detail })
	return out
}

func containsStatus(raw []byte) bool { return strings.Contains(string(raw), `"f:status"`) }

// unresolvedOutputRef matches a {{...}} reference naming outputs, e.g. {{steps.s1.outputs.parameters.out}}:
// left in a pod, it means the pod runs with the literal text instead of the value it asks for. The
// checker keeps its own pattern rather than the engine's, so a bug in one is not hidden by the other.
var unresolvedOutputRef = regexp.MustCompile(`\{\{[^{}]*\boutputs\.(parameters|result|artifacts)\b[^{}]*\}\}`)

// I8: no pod is created with an unresolved {{...outputs...}} reference in its command, args or environment
// (ARGO_TEMPLATE included), in any container. Checked on the first version of every pod seen.
func checkI8(h history) []violation {
	var out []violation
	seen := map[string]bool{}
	for _, pod := range h.pods {
		if seen[string(pod.UID)] {
			continue
		}
		seen[string(pod.UID)] = true
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			fields := append(slices.Clone(c.Command), c.Args...)
			for _, env := range c.Env {
				fields = append(fields, env.Value)
			}
			for _, f := range fields {
				if ref := unresolvedOutputRef.FindString(f); ref != "" {
					out = append(out, violation{"I8", fmt.Sprintf("pod %s/%s (node %s) created with the unresolved reference %s in container %s",
						pod.Namespace, pod.Name, pod.Annotations[common.AnnotationKeyNodeName], ref, c.Name)})
					break
				}
			}
		}
	}
	return out
}
