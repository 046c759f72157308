package actions

import (
	"context"
	"errors"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/truncate"
)

// Event reasons on the workflow when the outcome of an action applied in one of its passes is reported
// (the Event on the action itself has the outcome's reason).
const (
	EventReasonApplied = "WorkflowActionApplied"
	EventReasonFailed  = "WorkflowActionFailed"
)

// Report writes the outcome of every action recorded in the persisted workflow that is still pending: the
// irreversible step after the intent is stored (also after a crash between the two writes). records are
// the workflow's status.appliedActions as just written; wf is where the workflow Events go.
func (d *Drainer) Report(ctx context.Context, key string, wf *wfv1.Workflow, records []extstatus.AppliedAction) error {
	if len(records) == 0 {
		return nil
	}
	if d.BeforeStatus != nil && !d.BeforeStatus(key) {
		return nil
	}
	if err := d.Points.Hit(ctx, faultinject.PointBeforeActionStatus); err != nil {
		return err
	}
	byUID := map[string]*v1alpha1.WorkflowAction{}
	for _, a := range d.actionsOf(key) {
		byUID[string(a.UID)] = a
	}
	var errs []error
	for _, r := range records {
		a := byUID[string(r.UID)]
		if a == nil || a.Status.Terminal() {
			continue
		}
		out := Outcome{Phase: v1alpha1.ActionPhase(r.Outcome), Reason: r.Reason, Message: r.Message}
		// The outcome stored may differ from the record's (OutcomeNotStorable): the workflow's Event says what was stored.
		out, written, err := d.writeOutcome(ctx, a, out)
		if err != nil {
			errs = append(errs, err)
		}
		if !written {
			continue
		}
		typ, reason := corev1.EventTypeNormal, EventReasonApplied
		if out.Phase != v1alpha1.PhaseSucceeded {
			typ, reason = corev1.EventTypeWarning, EventReasonFailed
		}
		d.Recorder.Eventf(wf, typ, reason, "%s %s: %s (%s)", a.Spec.Action, a.Name, out.Reason, out.Message)
	}
	return errors.Join(errs...)
}

// writeOutcome sets an action's terminal status (once: a terminal action is never rewritten). It returns
// the outcome it stored (OutcomeNotStorable in place of one the API server refused) and reports whether this
// call wrote it: not when the action is gone, or already terminal on the server because our
// own earlier write has not reached the cache yet (its Events were recorded then).
func (d *Drainer) writeOutcome(ctx context.Context, a *v1alpha1.WorkflowAction, out Outcome) (Outcome, bool, error) {
	client := d.Client.Namespace(a.Namespace)
	now := metav1.NewTime(d.Clock.Now())
	status := v1alpha1.WorkflowActionStatus{Phase: out.Phase, Reason: out.Reason, Message: out.Message, CompletionTime: &now}
	// Remembered before the write, so that the cache's event for it, which may come before the answer,
	// always finds it to forget (Observed); forgotten again unless this call or an earlier one wrote it.
	_, earlier := d.written.LoadOrStore(a.UID, struct{}{})
	wrote := false
	defer func() {
		if !wrote && !earlier {
			d.written.Delete(a.UID)
		}
	}()
	for attempt := 1; ; attempt++ {
		next := a.DeepCopy()
		next.Status = status
		_, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: d.FieldManager})
		switch {
		case err == nil:
			d.Metrics.outcomes.WithLabelValues(actionLabel(a.Spec.Action), string(out.Phase), out.Reason).Inc()
			typ := corev1.EventTypeNormal
			if out.Phase != v1alpha1.PhaseSucceeded {
				typ = corev1.EventTypeWarning
			}
			d.Recorder.Eventf(a, typ, out.Reason, "%s", out.Message)
			wrote = true
			return out, true, nil
		case apierrors.IsNotFound(err):
			return out, false, nil
		case status.Reason != ReasonOutcomeNotStorable && refused(err):
			// The API server will never store this outcome: store a short one instead, so the action ends
			// and the actions behind it are not held up by it.
			d.Log.Warn("an action outcome cannot be stored; failing the action with a short reason", "action", a.Namespace+"/"+a.Name, "err", err)
			out = Outcome{Phase: v1alpha1.PhaseFailed, Reason: ReasonOutcomeNotStorable,
				Message: "the outcome could not be stored: " + truncate.String(err.Error(), 256)}
			status = v1alpha1.WorkflowActionStatus{Phase: out.Phase, Reason: out.Reason, Message: out.Message, CompletionTime: &now}
			continue
		case !apierrors.IsConflict(err) || attempt >= 3:
			return out, false, fmt.Errorf("writing the status of action %s/%s: %w", a.Namespace, a.Name, err)
		}
		// Our cached copy is stale: read the action, and stop if it is already terminal.
		fresh, gerr := client.Get(ctx, a.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return out, false, nil
		}
		if gerr != nil {
			return out, false, fmt.Errorf("writing the status of action %s/%s: %w (and re-reading it: %v)", a.Namespace, a.Name, err, gerr)
		}
		if fresh.UID != a.UID || fresh.Status.Terminal() {
			return out, false, nil
		}
		a = fresh
	}
}

// refused reports whether the API server will never store this write as it is.
func refused(err error) bool {
	_, refused := apierror.Refused(err)
	return refused
}

// outcomeErr keeps writeOutcome's error where only failures matter.
func outcomeErr(_ Outcome, _ bool, err error) error { return err }
