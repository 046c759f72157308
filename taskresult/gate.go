package taskresult

import (
	"fmt"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultTimeout bounds how long a node waits for its result after its pod ended.
const DefaultTimeout = 2 * time.Minute

// AnnotationTimeout on a Workflow overrides the timeout for its nodes (a Go duration, e.g. "30s").
const AnnotationTimeout = "wfguard.io/task-result-timeout"

// ReasonTimeout prefixes the message of a node whose result never completed; it is also the Event reason.
const ReasonTimeout = "TaskResultTimeout"

// TimeoutFor returns the workflow's timeout: its annotation if valid, else def. An invalid annotation is
// reported so the caller can warn; the default then applies.
func TimeoutFor(wf *wfv1.Workflow, def time.Duration) (time.Duration, error) {
	v, ok := wf.Annotations[AnnotationTimeout]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return def, fmt.Errorf("annotation %s=%q is not a positive duration; using %s", AnnotationTimeout, v, def)
	}
	return d, nil
}

// Complete reports whether the executor finalized the result (it will write nothing more).
func Complete(r *wfv1.WorkflowTaskResult) bool {
	return r != nil && r.Labels[common.LabelKeyReportOutputsCompleted] == "true"
}

// Synced reports whether a node's result gate is open.
func Synced(n *wfv1.NodeStatus) bool { return n.TaskResultSynced == nil || *n.TaskResultSynced }

// PodEnded reports whether a pod is terminal: its executor's report is due.
func PodEnded(pod *corev1.Pod) bool {
	return pod != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}

// CloseGate starts a pod node pessimistic: its gate stays closed until its own pod's complete result is
// merged or a rule opens it (I1, I2).
func CloseGate(n *wfv1.NodeStatus) {
	closed := false
	n.TaskResultSynced = &closed
}

// OpenGate opens a node's gate without a result: no executor will report for it any more (its pod was never
// created, was deleted, or can report nothing more), or its bounded wait expired.
func OpenGate(n *wfv1.NodeStatus) {
	open := true
	n.TaskResultSynced = &open
}

// PodFinishedAt is when an ended pod's last container finished (its creation if no container reports a
// finish): the start of its node's wait for a result the pass has not seen waiting before.
func PodFinishedAt(pod *corev1.Pod) time.Time {
	var t metav1.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated != nil && s.State.Terminated.FinishedAt.After(t.Time) {
			t = s.State.Terminated.FinishedAt
		}
	}
	if t.IsZero() {
		return pod.CreationTimestamp.Time
	}
	return t.Time
}

// DirectReadGrace is how long after a node starts waiting the cache gets to deliver its result before the
// controller reads past it. The executor finalizes the result before its pod ends, so a healthy cache has
// it within milliseconds; only a lagging one costs a read.
const DirectReadGrace = time.Second

// NeedsDirectRead reports whether a node's result should be read past the cache now: its pod ended, the
// gate is closed, the cache has no complete result, and the wait (which began at since) is older than the
// grace.
func NeedsDirectRead(n *wfv1.NodeStatus, pod *corev1.Pod, cached *wfv1.WorkflowTaskResult, since, now time.Time) bool {
	return n.Type == wfv1.NodeTypePod && !Synced(n) && PodEnded(pod) && !Complete(cached) &&
		!since.IsZero() && !now.Before(since.Add(DirectReadGrace))
}

// TimeoutMessage says what was missing when a node's wait expired.
func TimeoutMessage(tmpl *wfv1.Template, r *wfv1.WorkflowTaskResult, timeout time.Duration) string {
	state := "no task result exists"
	switch {
	case r == nil:
	case r.Outputs == nil || !r.Outputs.HasOutputs():
		state = "the task result is a placeholder (report-outputs-completed=false, no outputs)"
	default:
		state = "the task result has outputs but was never finalized (report-outputs-completed=false)"
	}
	var missing []string
	if tmpl != nil {
		for _, p := range tmpl.Outputs.Parameters {
			if !hasParameter(r, p.Name) {
				missing = append(missing, "parameter "+p.Name)
			}
		}
		for _, a := range tmpl.Outputs.Artifacts {
			if !hasArtifact(r, a.Name) {
				missing = append(missing, "artifact "+a.Name)
			}
		}
		if tmpl.Script != nil && (r == nil || r.Outputs == nil || r.Outputs.Result == nil) {
			missing = append(missing, "result")
		}
	}
	msg := fmt.Sprintf("%s: the executor's report did not complete within %s of the pod ending; %s", ReasonTimeout, timeout, state)
	if len(missing) > 0 {
		msg += "; missing outputs: " + strings.Join(missing, ", ")
	}
	return msg
}

func hasParameter(r *wfv1.WorkflowTaskResult, name string) bool {
	return r != nil && r.Outputs != nil && slices.ContainsFunc(r.Outputs.Parameters, func(p wfv1.Parameter) bool {
		return p.Name == name && p.Value != nil
	})
}

func hasArtifact(r *wfv1.WorkflowTaskResult, name string) bool {
	return r != nil && r.Outputs != nil && slices.ContainsFunc(r.Outputs.Artifacts, func(a wfv1.Artifact) bool { return a.Name == name })
}
