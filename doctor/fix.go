package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/explain"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/taskresult"
)

// Event reasons of the audit Events a repair records (Normal: the repair itself is healthy).
const (
	ReasonFinalizerReleased = "StatusFinalizerReleasedByDoctor"
	ReasonResultFinalized   = "TaskResultFinalizedByDoctor"
)

// AnnotationFinalizedBy marks a task result doctor finalized, beside argoexec's own label.
const AnnotationFinalizedBy = "wfguard.io/finalized-by"

// eventSource names doctor in the Events it records.
const eventSource = "wfguard-doctor"

// Outcome is what happened to one repair.
type Outcome struct {
	Repair Repair `json:"repair"`
	// Applied is true when the change was made; false in a dry run, or when re-verification found the
	// repair no longer safe or needed (Note says why), or on error.
	Applied bool   `json:"applied"`
	Note    string `json:"note,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Describe says what the repair does, in one line.
func (r Repair) Describe() string {
	switch r.Kind {
	case RepairReleaseFinalizer:
		return fmt.Sprintf("release %s from pod %s/%s (its workflow %s, uid %s, is gone)", common.FinalizerPodStatus, r.Namespace, r.Name, r.Workflow, r.WorkflowUID)
	case RepairFinalizeResult:
		return fmt.Sprintf("finalize task result %s/%s (label %s=true) of workflow %s: its pod is gone", r.Namespace, r.Name,
			common.LabelKeyReportOutputsCompleted, r.Workflow)
	}
	return r.Kind
}

// Fix runs the report's repairs. Without apply nothing is changed (a dry run). With apply each repair is
// re-verified against a fresh read first, applied, and recorded with an audit Event.
func Fix(ctx context.Context, c *inspect.Clients, report Report, apply bool, now time.Time) []Outcome {
	out := []Outcome{}
	for _, r := range report.Repairs() {
		o := Outcome{Repair: r}
		if apply {
			var err error
			switch r.Kind {
			case RepairReleaseFinalizer:
				o.Note, err = releaseOrphan(ctx, c, r, now)
			case RepairFinalizeResult:
				o.Note, err = finalizeResult(ctx, c, r, now)
			default:
				err = fmt.Errorf("unknown repair %q", r.Kind)
			}
			var evErr *eventError
			o.Applied = (err == nil && o.Note == "") || errors.As(err, &evErr)
			if err != nil {
				o.Error = err.Error()
			}
		}
		out = append(out, o)
	}
	return out
}

// releaseOrphan re-reads the pod and its workflow: the pod must be the same one and still hold the
// finalizer, and no workflow of its owner's UID may exist. It returns a note when it had nothing to do.
func releaseOrphan(ctx context.Context, c *inspect.Clients, r Repair, now time.Time) (string, error) {
	pod, err := c.Kube.CoreV1().Pods(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "the pod is gone", nil
	case err != nil:
		return "", fmt.Errorf("re-reading pod %s/%s: %w", r.Namespace, r.Name, err)
	case pod.UID != r.UID:
		return "a new pod of the same name exists", nil
	case !inspect.HoldsFinalizer(pod):
		return "the finalizer is already released", nil
	case types.UID(inspect.OwnerUID(pod)) != r.WorkflowUID:
		return "the pod's owner changed", nil
	}
	if r.WorkflowUID != "" && r.Workflow != "" {
		w, err := inspect.GetWorkflow(ctx, c, r.Namespace, r.Workflow)
		if err == nil && w.WF.UID == r.WorkflowUID {
			return "its workflow exists after all", nil
		}
		var rerr *inspect.ReadError
		if errors.As(err, &rerr) {
			return "", fmt.Errorf("re-checking that workflow %s/%s is gone: %w", r.Namespace, r.Workflow, err)
		}
	}
	if _, err := podfinalizer.RemoveFinalizer(ctx, c.Kube, pod); err != nil {
		return "", err
	}
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	return "", recordEvent(ctx, c, ref, ReasonFinalizerReleased, fmt.Sprintf("wfguard doctor released %s: the pod's workflow %s (uid %s) is gone",
		common.FinalizerPodStatus, r.Workflow, r.WorkflowUID), now)
}

// finalizeResult re-reads the workflow, its pods and the result: the workflow must be the same and its
// node still unfulfilled, no pod of it may run the node, and the result must be ours and unfinalized.
func finalizeResult(ctx context.Context, c *inspect.Clients, r Repair, now time.Time) (string, error) {
	w, err := inspect.GetWorkflow(ctx, c, r.Namespace, r.Workflow)
	if err != nil {
		return "", fmt.Errorf("re-reading workflow %s/%s: %w", r.Namespace, r.Workflow, err)
	}
	if w.WF.UID != r.WorkflowUID {
		return "the workflow was replaced", nil
	}
	n, ok := w.WF.Status.Nodes[r.NodeID]
	if !ok || fulfilled(&n) {
		return "the node no longer waits", nil
	}
	pods, err := inspect.ListPods(ctx, c, r.Namespace, r.Workflow)
	if err != nil {
		return "", fmt.Errorf("re-checking the pods of workflow %s/%s: %w", r.Namespace, r.Workflow, err)
	}
	if explain.PodsByNode(w.WF, pods)[r.NodeID] != nil {
		return "the node's pod exists", nil
	}
	res, err := c.Argo.ArgoprojV1alpha1().WorkflowTaskResults(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "the task result is gone", nil
	case err != nil:
		return "", fmt.Errorf("re-reading task result %s/%s: %w", r.Namespace, r.Name, err)
	case res.UID != r.UID || types.UID(inspect.OwnerUID(res)) != r.WorkflowUID:
		return "the task result was replaced", nil
	case taskresult.Complete(res):
		return "the task result is already complete", nil
	}
	// argoexec finalizes with a merge patch of this label; the resourceVersion guards against a
	// concurrent writer, and the annotation says who did it.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": res.ResourceVersion,
		"labels":          map[string]string{common.LabelKeyReportOutputsCompleted: "true"},
		"annotations":     map[string]string{AnnotationFinalizedBy: "wfguard doctor"},
	}})
	if err != nil {
		return "", err
	}
	if _, err := c.Argo.ArgoprojV1alpha1().WorkflowTaskResults(r.Namespace).Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("finalizing task result %s/%s: %w", r.Namespace, r.Name, err)
	}
	ref := corev1.ObjectReference{Kind: "Workflow", APIVersion: "argoproj.io/v1alpha1", Namespace: r.Namespace, Name: r.Workflow, UID: r.WorkflowUID}
	return "", recordEvent(ctx, c, ref, ReasonResultFinalized, fmt.Sprintf("wfguard doctor finalized task result %s of node %s: its pod is gone and no executor will finalize it",
		r.Name, n.Name), now)
}

// eventError is a repair that was applied but whose audit Event could not be written.
type eventError struct{ err error }

func (e *eventError) Error() string { return e.err.Error() }

// recordEvent writes one core/v1 Event directly (no broadcaster: doctor is a short-lived command).
func recordEvent(ctx context.Context, c *inspect.Clients, ref corev1.ObjectReference, reason, msg string, now time.Time) error {
	t := metav1.NewTime(now)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ref.Namespace},
		InvolvedObject: ref, Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: eventSource}, FirstTimestamp: t, LastTimestamp: t, Count: 1,
		ReportingController: eventSource, ReportingInstance: eventSource,
	}
	if _, err := c.Kube.CoreV1().Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return &eventError{fmt.Errorf("recording the audit Event on %s %s/%s (the repair itself was applied): %w", ref.Kind, ref.Namespace, ref.Name, err)}
	}
	return nil
}
