package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/truncate"
)

// maxAppliedActions bounds status.appliedActions; entries leave once their action's status is written.
const maxAppliedActions = 100

// Actor labels argo stamps on a workflow for the last action performed on it.
const (
	labelCreator = "workflows.argoproj.io/creator"
	labelActor   = "workflows.argoproj.io/actor"
	labelAction  = "workflows.argoproj.io/action"
)

// Event reasons of the action phase.
const (
	ReasonActionApplied = "WorkflowActionApplied"
	ReasonActionFailed  = "WorkflowActionFailed"
)

func (c *Controller) newActionInformer() cache.SharedIndexInformer {
	client := c.actions.Namespace(c.opts.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return client.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(c.wrapListWatch("workflowactions", lw), &v1alpha1.WorkflowAction{}, c.opts.ResyncPeriod, cache.Indexers{
		IndexWorkflowKey: func(obj any) ([]string, error) {
			a := obj.(*v1alpha1.WorkflowAction)
			return []string{a.Namespace + "/" + a.Spec.WorkflowRef.Name}, nil
		},
	})
	return inf
}

func (c *Controller) enqueueAction(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if a, ok := obj.(*v1alpha1.WorkflowAction); ok {
		c.queue.Add(a.Namespace + "/" + a.Spec.WorkflowRef.Name)
	}
}

// actionsOf returns the actions naming key's workflow, in application order.
func (c *Controller) actionsOf(key string) []*v1alpha1.WorkflowAction {
	objs, _ := c.inf.actions.GetIndexer().ByIndex(IndexWorkflowKey, key)
	out := make([]*v1alpha1.WorkflowAction, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1alpha1.WorkflowAction))
	}
	actions.Sort(out)
	return out
}

// drainActions is the action phase: pending actions for this workflow are applied in order to the
// in-memory workflow and recorded write-ahead in status.appliedActions, in the same write as their effect.
// Actions for another incarnation of the name fail at once (they change nothing, so need no record).
func (c *Controller) drainActions(ctx context.Context, p *pass) error {
	recorded := map[string]bool{}
	for _, r := range p.Ext.AppliedActions {
		recorded[string(r.UID)] = true
	}
	var errs []error
	for _, a := range c.actionsOf(p.key) {
		if a.Status.Terminal() || recorded[string(a.UID)] {
			continue // done, or applied before a crash: its outcome is reported after persist
		}
		if len(p.Ext.AppliedActions) >= maxAppliedActions {
			// The record is full of outcomes not yet reported; apply more only once they are, so no
			// record is ever dropped (which would let a replay apply an action twice).
			p.requeueSoon = true
			break
		}
		if !actions.Targets(a, p.WF) {
			out := actions.Outcome{Phase: v1alpha1.PhaseFailed, Reason: actions.ReasonWorkflowNotFound,
				Message: fmt.Sprintf("workflow %s has UID %s, not %s", p.WF.Name, p.WF.UID, a.Spec.WorkflowRef.UID)}
			errs = append(errs, outcomeErr(c.writeOutcome(ctx, a, out)))
			continue
		}
		out := actions.Apply(p.WF, p.Ext, a, metav1.NewTime(p.Now))
		p.Ext.AppliedActions = append(p.Ext.AppliedActions, extstatus.AppliedAction{
			UID: a.UID, Name: a.Name, Outcome: string(out.Phase), Reason: out.Reason, Message: out.Message})
		if out.Phase == v1alpha1.PhaseSucceeded {
			stampActor(p.WF, a)
		}
		c.log.Info("applied workflow action", "workflow", p.key, "action", a.Name, "type", a.Spec.Action, "outcome", out.Phase, "reason", out.Reason)
	}
	p.Ext.AppliedActions = pruneApplied(p.Ext.AppliedActions, c.actionsOf(p.key))
	return errors.Join(errs...)
}

// pruneApplied drops records whose action has its status or is gone, and bounds the list.
func pruneApplied(records []extstatus.AppliedAction, current []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
	pending := map[string]bool{}
	for _, a := range current {
		if !a.Status.Terminal() {
			pending[string(a.UID)] = true
		}
	}
	out := slices.DeleteFunc(slices.Clone(records), func(r extstatus.AppliedAction) bool { return !pending[string(r.UID)] })
	if len(out) == 0 {
		return nil
	}
	return out
}

func stampActor(wf *wfv1.Workflow, a *v1alpha1.WorkflowAction) {
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	wf.Labels[labelAction] = a.Spec.Action
	if creator := a.Labels[labelCreator]; creator != "" {
		wf.Labels[labelActor] = creator
	}
}

// reportActions writes the outcome of every action recorded in the persisted workflow that is still
// pending: the irreversible step after the intent is stored (also after a crash between the two writes).
func (c *Controller) reportActions(ctx context.Context, p *pass) error {
	if len(p.Ext.AppliedActions) == 0 {
		return nil
	}
	if h := c.opts.Hooks.BeforeActionStatus; h != nil && !h(p.key) {
		return nil
	}
	if err := c.opts.Points.Hit(ctx, faultinject.PointBeforeActionStatus); err != nil {
		return err
	}
	byUID := map[string]*v1alpha1.WorkflowAction{}
	for _, a := range c.actionsOf(p.key) {
		byUID[string(a.UID)] = a
	}
	var errs []error
	for _, r := range p.Ext.AppliedActions {
		a := byUID[string(r.UID)]
		if a == nil || a.Status.Terminal() {
			continue
		}
		out := actions.Outcome{Phase: v1alpha1.ActionPhase(r.Outcome), Reason: r.Reason, Message: r.Message}
		written, err := c.writeOutcome(ctx, a, out)
		if err != nil {
			errs = append(errs, err)
		}
		if !written {
			continue
		}
		typ, reason := corev1.EventTypeNormal, ReasonActionApplied
		if out.Phase != v1alpha1.PhaseSucceeded {
			typ, reason = corev1.EventTypeWarning, ReasonActionFailed
		}
		c.recorder.Eventf(p.WF, typ, reason, "%s %s: %s (%s)", a.Spec.Action, a.Name, out.Reason, out.Message)
	}
	return errors.Join(errs...)
}

// writeOutcome sets an action's terminal status (once: a terminal action is never rewritten). It reports
// whether this call wrote it: not when the action is gone, or already terminal on the server because our
// own earlier write has not reached the cache yet (its Events were recorded then).
func (c *Controller) writeOutcome(ctx context.Context, a *v1alpha1.WorkflowAction, out actions.Outcome) (bool, error) {
	client := c.actions.Namespace(a.Namespace)
	now := metav1.NewTime(c.clock.Now())
	status := v1alpha1.WorkflowActionStatus{Phase: out.Phase, Reason: out.Reason, Message: out.Message, CompletionTime: &now}
	for attempt := 1; ; attempt++ {
		next := a.DeepCopy()
		next.Status = status
		_, err := client.UpdateStatus(ctx, next, updateOptions)
		switch {
		case err == nil:
			c.metrics.actions.WithLabelValues(actionLabel(a.Spec.Action), string(out.Phase), out.Reason).Inc()
			typ := corev1.EventTypeNormal
			if out.Phase != v1alpha1.PhaseSucceeded {
				typ = corev1.EventTypeWarning
			}
			c.recorder.Eventf(a, typ, out.Reason, "%s", out.Message)
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case status.Reason != actions.ReasonOutcomeNotStorable && refused(err):
			// The API server will never store this outcome: store a short one instead, so the action ends
			// and the actions behind it are not held up by it.
			c.log.Warn("an action outcome cannot be stored; failing the action with a short reason", "action", a.Namespace+"/"+a.Name, "err", err)
			out = actions.Outcome{Phase: v1alpha1.PhaseFailed, Reason: actions.ReasonOutcomeNotStorable,
				Message: "the outcome could not be stored: " + truncate.String(err.Error(), 256)}
			status = v1alpha1.WorkflowActionStatus{Phase: out.Phase, Reason: out.Reason, Message: out.Message, CompletionTime: &now}
			continue
		case !apierrors.IsConflict(err) || attempt >= 3:
			return false, fmt.Errorf("writing the status of action %s/%s: %w", a.Namespace, a.Name, err)
		}
		// Our cached copy is stale: read the action, and stop if it is already terminal.
		fresh, gerr := client.Get(ctx, a.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return false, nil
		}
		if gerr != nil {
			return false, fmt.Errorf("writing the status of action %s/%s: %w (and re-reading it: %v)", a.Namespace, a.Name, err, gerr)
		}
		if fresh.UID != a.UID || fresh.Status.Terminal() {
			return false, nil
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
func outcomeErr(_ bool, err error) error { return err }

// actionLabel bounds the metric's cardinality: unknown action values share one label.
func actionLabel(action string) string {
	switch action {
	case v1alpha1.ActionSuspend, v1alpha1.ActionResume, v1alpha1.ActionStop, v1alpha1.ActionTerminate:
		return action
	}
	return "Unknown"
}

// failOrphanActions fails the pending actions of a workflow that does not exist. A workflow outside our
// selection (another controller instance's) exists on the server: its actions are left to that controller.
func (c *Controller) failOrphanActions(ctx context.Context, key string) error {
	pending := slices.DeleteFunc(c.actionsOf(key), func(a *v1alpha1.WorkflowAction) bool { return a.Status.Terminal() })
	if len(pending) == 0 {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(pending[0].Spec.WorkflowRef.Name); len(msgs) > 0 {
		// No workflow can ever have this name (e.g. "a/b", stored before the CRD validated it).
		var errs []error
		for _, a := range pending {
			errs = append(errs, outcomeErr(c.writeOutcome(ctx, a, actions.Outcome{Phase: v1alpha1.PhaseFailed, Reason: actions.ReasonWorkflowNotFound,
				Message: truncate.String(fmt.Sprintf("workflowRef.name %q is not a valid workflow name, so no workflow can have it: %s",
					a.Spec.WorkflowRef.Name, strings.Join(msgs, "; ")), actions.MaxMessageLength)})))
		}
		return errors.Join(errs...)
	}
	_, err := c.dynamic.Resource(workflowsResource).Namespace(pending[0].Namespace).Get(ctx, pending[0].Spec.WorkflowRef.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil // not ours
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("checking whether workflow %s exists: %w", key, err)
	}
	var errs []error
	for _, a := range pending {
		errs = append(errs, outcomeErr(c.writeOutcome(ctx, a, actions.Outcome{Phase: v1alpha1.PhaseFailed,
			Reason: actions.ReasonWorkflowNotFound, Message: fmt.Sprintf("workflow %s does not exist", a.Spec.WorkflowRef.Name)})))
	}
	return errors.Join(errs...)
}

// settleActionsOfCompleted reports recorded outcomes and fails new actions of a completed workflow.
func (c *Controller) settleActionsOfCompleted(ctx context.Context, key string, wf *wfv1.Workflow, ext extstatus.Extensions) error {
	recorded := map[string]extstatus.AppliedAction{}
	for _, r := range ext.AppliedActions {
		recorded[string(r.UID)] = r
	}
	var errs []error
	for _, a := range c.actionsOf(key) {
		if a.Status.Terminal() {
			continue
		}
		if !actions.Targets(a, wf) {
			errs = append(errs, outcomeErr(c.writeOutcome(ctx, a, actions.Outcome{Phase: v1alpha1.PhaseFailed, Reason: actions.ReasonWorkflowNotFound,
				Message: fmt.Sprintf("workflow %s has UID %s, not %s", wf.Name, wf.UID, a.Spec.WorkflowRef.UID)})))
			continue
		}
		out := actions.Outcome{Phase: v1alpha1.PhaseFailed, Reason: actions.ReasonWorkflowCompleted,
			Message: fmt.Sprintf("workflow %s is already %s", wf.Name, wf.Status.Phase)}
		if r, ok := recorded[string(a.UID)]; ok {
			out = actions.Outcome{Phase: v1alpha1.ActionPhase(r.Outcome), Reason: r.Reason, Message: r.Message}
		}
		errs = append(errs, outcomeErr(c.writeOutcome(ctx, a, out)))
	}
	return errors.Join(errs...)
}

// gcActions deletes terminal actions ActionTTL after their completion; pending ones never expire by clock.
func (c *Controller) gcActions(ctx context.Context) {
	ticker := c.clock.NewTicker(c.opts.ActionGCInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		now := c.clock.Now()
		for _, o := range c.inf.actions.GetStore().List() {
			a := o.(*v1alpha1.WorkflowAction)
			if !a.Status.Terminal() || a.Status.CompletionTime == nil || now.Before(a.Status.CompletionTime.Add(c.opts.ActionTTL)) {
				continue
			}
			err := c.actions.Namespace(a.Namespace).Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.UID}})
			switch {
			case err == nil:
				c.metrics.actionsExpired.Inc()
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				c.log.Warn("deleting an expired workflow action", "action", a.Namespace+"/"+a.Name, "err", err)
			}
		}
		if h := c.opts.Hooks.AfterActionGC; h != nil {
			h()
		}
	}
}
