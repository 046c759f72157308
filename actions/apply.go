package actions

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/truncate"
	"github.com/wfguard/wfguard/taskresult"
)

// Outcome reasons, one per outcome.
const (
	ReasonApplied                  = "Applied"
	ReasonWorkflowNotFound         = "WorkflowNotFound"
	ReasonWorkflowCompleted        = "WorkflowCompleted"
	ReasonNothingToResume          = "NothingToResume"
	ReasonNothingToStop            = "NothingToStop"
	ReasonInvalidNodeFieldSelector = "InvalidNodeFieldSelector"
	ReasonUnknownAction            = "UnknownAction"
	// ReasonMissingOutputParameter: a resumed suspend node declares an output (valueFrom.supplied) that
	// the Resume did not set and that has no default; nothing is applied.
	ReasonMissingOutputParameter  = "MissingOutputParameter"
	ReasonInvalidOutputParameters = "InvalidOutputParameters"
	// ReasonOutcomeNotStorable replaces an outcome the API server refused to store (e.g. too large).
	ReasonOutcomeNotStorable = "OutcomeNotStorable"
	// ReasonWaitingForRecord is the reason of a Pending action: its workflow's write-ahead record is full of
	// applied actions whose outcomes are not written yet.
	ReasonWaitingForRecord = "WaitingForRecord"
)

// Bounds of a Resume's outputParameters, the same as the CRD's (an action stored before the CRD had them
// is held to them here): a value lands in the workflow's status, which must stay storable.
const (
	MaxOutputParameters      = 64
	MaxOutputParameterLength = 32 << 10
)

// MaxOutputParametersCopied bounds what one Resume adds to the workflow's status (the values times the nodes
// it resumes), well below the 1 MiB at which nodes are compressed, so a Resume within the CRD's bounds is
// refused rather than ending its workflow as unstorable.
const MaxOutputParametersCopied = 256 << 10

// outputBytes is the size of a Resume's output parameter names and values.
func outputBytes(params *v1alpha1.ResumeParameters) int {
	n := 0
	if params != nil {
		for k, v := range params.OutputParameters {
			n += len(k) + len(v)
		}
	}
	return n
}

// MaxMessageLength bounds every outcome message (and a Stop's node message): messages quote user input
// (selectors), and an unbounded one made a write-ahead record or an action status the API server refuses.
const MaxMessageLength = 1024

// Outcome is what applying one action did.
type Outcome struct {
	Phase   v1alpha1.ActionPhase
	Reason  string
	Message string
	// Unchanged: the action succeeded because its effect was already in place (a second Suspend or
	// Terminate); it changes no label.
	Unchanged bool
}

func alreadyInEffect(msg string) Outcome {
	out := succeeded(msg)
	out.Unchanged = true
	return out
}

func succeeded(msg string) Outcome {
	return Outcome{Phase: v1alpha1.PhaseSucceeded, Reason: ReasonApplied, Message: truncate.String(msg, MaxMessageLength)}
}

func failed(reason, format string, args ...any) Outcome {
	return Outcome{Phase: v1alpha1.PhaseFailed, Reason: reason, Message: truncate.String(fmt.Sprintf(format, args...), MaxMessageLength)}
}

// Sort orders actions as the controller applies them: by creationTimestamp, ties by name.
func Sort(list []*v1alpha1.WorkflowAction) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Targets reports whether the action is meant for this incarnation of the workflow (UID pinning).
func Targets(a *v1alpha1.WorkflowAction, wf *wfv1.Workflow) bool {
	return a.Spec.WorkflowRef.Name == wf.Name && (a.Spec.WorkflowRef.UID == "" || a.Spec.WorkflowRef.UID == wf.UID)
}

// Apply applies one action to the in-memory workflow and its status extensions, upstream's semantics.
func Apply(wf *wfv1.Workflow, ext *extstatus.Extensions, a *v1alpha1.WorkflowAction, now metav1.Time) Outcome {
	if a.Spec.Action == v1alpha1.ActionRetry {
		return retry(wf, ext, a.Spec.Retry, now)
	}
	if wf.Status.Phase.Completed() {
		return failed(ReasonWorkflowCompleted, "workflow %s is already %s", wf.Name, wf.Status.Phase)
	}
	switch a.Spec.Action {
	case v1alpha1.ActionSuspend:
		if suspended(wf, ext) {
			return alreadyInEffect(fmt.Sprintf("workflow %s was already suspended; nothing changed", wf.Name))
		}
		t := true
		ext.Suspended = &t
		wf.Spec.Suspend = &t // mirrored where argo's typed clients keep it (see mirrorShutdown)
		return succeeded("workflow suspended")
	case v1alpha1.ActionResume:
		return resume(wf, ext, a.Spec.Resume, now)
	case v1alpha1.ActionStop:
		if a.Spec.Stop != nil && a.Spec.Stop.NodeFieldSelector != "" {
			return stopNodes(wf, a.Spec.Stop, now)
		}
		var message string
		if a.Spec.Stop != nil {
			message = a.Spec.Stop.Message
		}
		return shutDown(wf, ext, wfv1.ShutdownStrategyStop, "stopping", message)
	case v1alpha1.ActionTerminate:
		var message string
		if a.Spec.Terminate != nil {
			message = a.Spec.Terminate.Message
		}
		return shutDown(wf, ext, wfv1.ShutdownStrategyTerminate, "terminating", message)
	default:
		return failed(ReasonUnknownAction, "unknown action %q (want Suspend, Resume, Stop, Terminate or Retry)", a.Spec.Action)
	}
}

// shutDown accepts a Stop or Terminate of the whole workflow, with the requester's message for its final
// message; a repeated one succeeds without a change (no dedup of requests, as the design says).
func shutDown(wf *wfv1.Workflow, ext *extstatus.Extensions, s wfv1.ShutdownStrategy, verb, message string) Outcome {
	if ext.Shutdown == s {
		return alreadyInEffect(fmt.Sprintf("workflow %s was already shutting down with strategy %s; nothing changed", wf.Name, s))
	}
	mirrorShutdown(wf, ext, s)
	ext.ShutdownMessage = truncate.String(message, MaxMessageLength)
	if message == "" {
		return succeeded("workflow " + verb)
	}
	return succeeded(fmt.Sprintf("workflow %s: %s", verb, quoted(message)))
}

// mirrorShutdown records an accepted shutdown in status.shutdown and, like a suspension, in the spec field
// argo uses for it. argo's CLI, server and UI rewrite whole Workflows through argo's Go types, which drop
// wfguard's status fields; the spec field survives such a write, so a Stop or Suspend is never lost to it.
func mirrorShutdown(wf *wfv1.Workflow, ext *extstatus.Extensions, s wfv1.ShutdownStrategy) {
	ext.Shutdown = s
	wf.Spec.Shutdown = s
}

func suspended(wf *wfv1.Workflow, ext *extstatus.Extensions) bool {
	return (ext.Suspended != nil && *ext.Suspended) || (wf.Spec.Suspend != nil && *wf.Spec.Suspend)
}

// resume lifts the workflow's suspension and marks active suspend nodes (those matching the selector, if
// any) Succeeded with the given outputs, as argo's resume does.
func resume(wf *wfv1.Workflow, ext *extstatus.Extensions, params *v1alpha1.ResumeParameters, now metav1.Time) Outcome {
	selector, out, ok := resumeSelector(params)
	if !ok {
		return out
	}
	if out, ok := outputParametersWithinBounds(params); !ok {
		return out
	}
	nodes := activeSuspendNodes(wf, selector)
	if out, ok := outputsStorable(params, len(nodes)); !ok {
		return out
	}
	wasSuspended := suspended(wf, ext) && (params == nil || params.NodeFieldSelector == "")
	if len(nodes) == 0 && !wasSuspended {
		return failed(ReasonNothingToResume, "workflow %s has nothing suspended to resume (no suspended workflow, no active suspend node matching)", wf.Name)
	}
	resumed, out, ok := resumedOutputs(wf, nodes, params)
	if !ok {
		return out
	}
	if wasSuspended {
		f := false
		ext.Suspended = &f
		wf.Spec.Suspend = nil
	}
	for _, id := range nodes {
		n := wf.Status.Nodes[id]
		n.Phase = wfv1.NodeSucceeded
		n.Message = ""
		n.FinishedAt = now
		n.Outputs = resumed[id]
		wf.Status.Nodes[id] = n
	}
	return succeeded(fmt.Sprintf("resumed (%d suspend nodes)", len(nodes)))
}

// resumeSelector is the Resume's node selector; without one, every node.
func resumeSelector(params *v1alpha1.ResumeParameters) (fields.Selector, Outcome, bool) {
	if params == nil || params.NodeFieldSelector == "" {
		return fields.Everything(), Outcome{}, true
	}
	s, err := fields.ParseSelector(params.NodeFieldSelector)
	if err != nil {
		return nil, failed(ReasonInvalidNodeFieldSelector, "nodeFieldSelector %q: %v", quoted(params.NodeFieldSelector), err), false
	}
	return s, Outcome{}, true
}

// outputParametersWithinBounds holds a Resume's outputParameters to the CRD's bounds, naming the first
// parameter past them by name.
func outputParametersWithinBounds(params *v1alpha1.ResumeParameters) (Outcome, bool) {
	if params == nil {
		return Outcome{}, true
	}
	if len(params.OutputParameters) > MaxOutputParameters {
		return failed(ReasonInvalidOutputParameters, "%d outputParameters, more than the limit of %d", len(params.OutputParameters), MaxOutputParameters), false
	}
	for _, k := range slices.Sorted(maps.Keys(params.OutputParameters)) {
		if v := params.OutputParameters[k]; len(v) > MaxOutputParameterLength || len(k) > 253 {
			return failed(ReasonInvalidOutputParameters, "outputParameters %q: a %d-byte name and a %d-byte value, more than the limits of 253 and %d",
				quoted(k), len(k), len(v), MaxOutputParameterLength), false
		}
	}
	return Outcome{}, true
}

// outputsStorable refuses outputs that the resumed nodes together would add past MaxOutputParametersCopied.
func outputsStorable(params *v1alpha1.ResumeParameters, nodes int) (Outcome, bool) {
	if copied := outputBytes(params) * max(1, nodes); copied > MaxOutputParametersCopied {
		// Each resumed node stores the values: past this the workflow's status could not be stored at all.
		return failed(ReasonInvalidOutputParameters, "outputParameters of %d bytes for %d nodes would add %d bytes to the workflow's status, more than the limit of %d",
			outputBytes(params), max(1, nodes), copied, MaxOutputParametersCopied), false
	}
	return Outcome{}, true
}

// resumedOutputs are the outputs each node gets: its own with the supplied values set, and defaults for
// those still awaiting one.
func resumedOutputs(wf *wfv1.Workflow, nodes []string, params *v1alpha1.ResumeParameters) (map[string]*wfv1.Outputs, Outcome, bool) {
	// Every node's outputs are settled before anything is applied: one node missing a required output
	// refuses the whole Resume, so the workflow is untouched.
	resumed := make(map[string]*wfv1.Outputs, len(nodes))
	for _, id := range nodes {
		n := wf.Status.Nodes[id]
		outputs := n.Outputs.DeepCopy()
		if params != nil && len(params.OutputParameters) > 0 {
			if outputs == nil {
				outputs = &wfv1.Outputs{}
			}
			for _, k := range slices.Sorted(maps.Keys(params.OutputParameters)) {
				setParameter(outputs, k, params.OutputParameters[k])
			}
		}
		outputs, err := taskresult.ApplySuppliedDefaults(outputs)
		if err != nil {
			return nil, failed(ReasonMissingOutputParameter, "node %s: %v; resume it with outputParameters", n.Name, err), false
		}
		resumed[id] = outputs
	}
	return resumed, Outcome{}, true
}

// setParameter gives output parameter name its supplied value: the declared one awaiting it (which stops
// waiting), else a new parameter.
func setParameter(outputs *wfv1.Outputs, name, value string) {
	for i, p := range outputs.Parameters {
		if p.Name == name {
			outputs.Parameters[i].Value = wfv1.AnyStringPtr(value)
			outputs.Parameters[i].ValueFrom = nil
			return
		}
	}
	outputs.Parameters = append(outputs.Parameters, wfv1.Parameter{Name: name, Value: wfv1.AnyStringPtr(value)})
}

// stopNodes fails the active suspend nodes matching the selector with the message.
func stopNodes(wf *wfv1.Workflow, params *v1alpha1.StopParameters, now metav1.Time) Outcome {
	selector, err := fields.ParseSelector(params.NodeFieldSelector)
	if err != nil {
		return failed(ReasonInvalidNodeFieldSelector, "nodeFieldSelector %q: %v", quoted(params.NodeFieldSelector), err)
	}
	nodes := activeSuspendNodes(wf, selector)
	if len(nodes) == 0 {
		return failed(ReasonNothingToStop, "no active suspend node of %s matches %q", wf.Name, quoted(params.NodeFieldSelector))
	}
	for _, id := range nodes {
		n := wf.Status.Nodes[id]
		n.Phase = wfv1.NodeFailed
		n.Message = truncate.String(params.Message, MaxMessageLength)
		n.FinishedAt = now
		wf.Status.Nodes[id] = n
	}
	return succeeded(fmt.Sprintf("stopped %d suspend nodes", len(nodes)))
}

// quoted bounds user input quoted in a message, so the rest of the message survives the overall bound.
func quoted(s string) string { return truncate.String(s, 256) }

// activeSuspendNodes are the Running suspend nodes matching selector, by the fields argo's selectors use.
func activeSuspendNodes(wf *wfv1.Workflow, selector fields.Selector) []string {
	var out []string
	for id, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypeSuspend || n.Phase != wfv1.NodeRunning {
			continue
		}
		if selector.Matches(nodeFields(&n)) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
