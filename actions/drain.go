package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/admissionpolicy"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/reportonce"
	"github.com/wfguard/wfguard/internal/truncate"
	"github.com/wfguard/wfguard/provenance"
)

// maxAppliedActions bounds status.appliedActions; entries leave once their action's status is written.
const maxAppliedActions = 100

// IndexWorkflowKey is the action cache's index by the "namespace/name" of the workflow an action names
// (IndexByWorkflow): the drain finds a workflow's actions by it.
const IndexWorkflowKey = "workflowKey"

// WorkflowKey is the "namespace/name" of the workflow the action names: the work-queue key of the workflow
// whose reconcile drains it.
func WorkflowKey(a *v1alpha1.WorkflowAction) string {
	return a.Namespace + "/" + a.Spec.WorkflowRef.Name
}

// IndexByWorkflow indexes actions under IndexWorkflowKey.
func IndexByWorkflow(obj any) ([]string, error) {
	a, ok := obj.(*v1alpha1.WorkflowAction)
	if !ok {
		return nil, fmt.Errorf("indexing actions by workflow: %T is not a WorkflowAction", obj)
	}
	return []string{WorkflowKey(a)}, nil
}

// Drainer is the action seam of a workflow's reconcile: it applies the pending actions of a workflow to the
// in-memory pass with their write-ahead record (Drain), writes their outcomes once that pass is persisted
// (Report, and ReportGone for a workflow deleted before that), and settles the actions of a workflow that is
// gone (FailOrphans) or completed (SettleCompleted).
// The caller serializes calls per workflow key, as the pipeline does.
type Drainer struct {
	// Client writes the actions' statuses.
	Client *v1alpha1.Client
	// Actions is the action cache, indexed by IndexWorkflowKey (IndexByWorkflow).
	Actions cache.Indexer
	// Workflows reads a workflow the cache does not hold from the API server: an action is failed as
	// orphaned only when the workflow is gone there too.
	Workflows dynamic.NamespaceableResourceInterface
	// FieldManager names the writer of the actions' statuses.
	FieldManager string
	// Clock stamps status.completionTime.
	Clock    clock.PassiveClock
	Log      *slog.Logger
	Metrics  *Metrics
	Recorder record.EventRecorder
	// Key seals the write-ahead records this drainer writes and tells them from entries another identity
	// wrote into the workflow; nil writes them unsealed and trusts every entry (--record-key-secret="").
	Key *provenance.Key
	// Points are the crash points (faultinject.PointBeforeActionStatus); nil passes.
	Points *faultinject.Points
	// BeforeStatus runs after the persist that recorded actions, before their statuses are written;
	// returning false skips the writes, as a crash at that point would. Nil writes them.
	BeforeStatus func(key string) bool
	// RetryPolicy reads RetryOverridesPolicy as the API server stores it (admissionpolicy.Read), when a
	// Retry that rewrites its workflow is about to be applied; nil takes the policy for not installed.
	RetryPolicy func(ctx context.Context) (admissionpolicy.Verdict, error)

	// written holds the UIDs of actions whose outcome this drainer wrote, until the cache shows them
	// terminal: an action reported from a deleted workflow's record has no record in a new workflow of the
	// same name, so only this keeps a stale cache from applying it again.
	written sync.Map
	// gone holds the records of deleted workflows until ReportGone reports them (KeepGone).
	gone goneRecords
	// ignored are the forged records already reported.
	ignored reportonce.Keys
}

// Observed is the action cache's update handler: once the cache shows an action terminal, its own status
// keeps the drain from applying it, and the drainer forgets its write.
func (d *Drainer) Observed(obj any) {
	if a, ok := obj.(*v1alpha1.WorkflowAction); ok && a.Status.Terminal() {
		d.written.Delete(a.UID)
	}
}

// Forget is the action cache's delete handler: a deleted action needs no memory of its write.
func (d *Drainer) Forget(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if a, ok := obj.(*v1alpha1.WorkflowAction); ok {
		d.written.Delete(a.UID)
	}
}

// actionsOf returns the actions naming key's workflow, in application order.
func (d *Drainer) actionsOf(key string) []*v1alpha1.WorkflowAction {
	objs, _ := d.Actions.ByIndex(IndexWorkflowKey, key)
	out := make([]*v1alpha1.WorkflowAction, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1alpha1.WorkflowAction))
	}
	Sort(out)
	return out
}

// Drain is the action phase of a pass: pending actions for this workflow are applied in order to the
// in-memory workflow and recorded write-ahead in ext.AppliedActions, so the pass's one write stores both
// their effect and the memory that they were applied. Actions for another incarnation of the name fail at
// once (they change nothing, so need no record). recordFull says some actions wait until recorded outcomes
// are reported: the caller should pass again soon. An error is an outcome that could not be written.
func (d *Drainer) Drain(ctx context.Context, key string, wf *wfv1.Workflow, ext *extstatus.Extensions, now time.Time) (recordFull bool, err error) {
	// Room is made before anything is applied: the records of reported actions would otherwise hold the
	// bound until a pass that writes something else, which a suspended workflow may never have.
	ext.AppliedActions = d.pruneApplied(d.trusted(wf, ext.AppliedActions), d.actionsOf(key))
	recorded := map[string]bool{}
	for _, r := range ext.AppliedActions {
		recorded[string(r.UID)] = true
	}
	var errs []error
	for _, a := range d.actionsOf(key) {
		if a.Status.Terminal() {
			continue
		}
		if _, ok := d.written.Load(a.UID); ok || recorded[string(a.UID)] {
			continue // reported, or applied before a crash: its outcome is reported after persist
		}
		if len(ext.AppliedActions) >= maxAppliedActions {
			// The record is full of outcomes not yet reported; apply more only once they are, so no
			// record is ever dropped (which would let a replay apply an action twice).
			if !recordFull {
				d.Log.Info("workflow actions wait for the write-ahead record", "workflow", key, "recorded", len(ext.AppliedActions))
			}
			recordFull = true
			errs = append(errs, d.markPending(ctx, a, ReasonWaitingForRecord,
				fmt.Sprintf("seen; waiting until the outcomes of the %d actions applied to workflow %s before it are written", len(ext.AppliedActions), wf.Name)))
			continue
		}
		if !Targets(a, wf) {
			out := Outcome{Phase: v1alpha1.PhaseFailed, Reason: ReasonWorkflowNotFound,
				Message: fmt.Sprintf("workflow %s has UID %s, not %s", wf.Name, wf.UID, a.Spec.WorkflowRef.UID)}
			errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, out)))
			continue
		}
		out := Apply(wf, ext, a, metav1.NewTime(now))
		ext.AppliedActions = append(ext.AppliedActions, d.newRecord(wf, a, out))
		if out.Phase == v1alpha1.PhaseSucceeded && !out.Unchanged {
			stampActor(wf, a)
		}
		d.Log.Info("applied workflow action", "workflow", key, "action", a.Name, "type", a.Spec.Action, "outcome", out.Phase, "reason", out.Reason)
	}
	ext.AppliedActions = d.pruneApplied(ext.AppliedActions, d.actionsOf(key))
	return recordFull, errors.Join(errs...)
}

// markPending writes phase Pending, with why the action waits, on an action the controller has seen but
// cannot settle in this pass; an action settled in the pass that sees it goes straight to its outcome. It
// is written once: a later pass leaves a Pending action's status alone until its outcome.
func (d *Drainer) markPending(ctx context.Context, a *v1alpha1.WorkflowAction, reason, message string) error {
	if a.Status.Phase != "" {
		return nil
	}
	next := a.DeepCopy()
	next.Status = v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhasePending, Reason: reason, Message: truncate.String(message, MaxMessageLength)}
	_, err := d.Client.Namespace(a.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: d.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		// A conflict means our copy is stale (perhaps already terminal): the next pass looks again.
		return fmt.Errorf("marking action %s/%s pending: %w", a.Namespace, a.Name, err)
	}
	return nil
}

// pruneApplied drops records whose action has its status (in the cache, or written by this drainer and
// not yet in the cache) or is gone.
func (d *Drainer) pruneApplied(records []extstatus.AppliedAction, current []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
	pending := map[string]bool{}
	for _, a := range current {
		if _, reported := d.written.Load(a.UID); !a.Status.Terminal() && !reported {
			pending[string(a.UID)] = true
		}
	}
	out := slices.DeleteFunc(slices.Clone(records), func(r extstatus.AppliedAction) bool { return !pending[string(r.UID)] })
	if len(out) == 0 {
		return nil
	}
	return out
}

// actorOfCreator maps the requester labels on an action (argo's creator labels) to the workflow labels
// argo uses for who performed the last action.
var actorOfCreator = map[string]string{
	common.LabelKeyCreator:                  common.LabelKeyActor,
	common.LabelKeyCreatorEmail:             common.LabelKeyActorEmail,
	common.LabelKeyCreatorPreferredUsername: common.LabelKeyActorPreferredUsername,
}

// stampActor sets argo's labels for the last action performed on the workflow and who requested it. The
// previous action's requester labels are replaced, not kept: an action without them leaves none, so the
// labels never name someone who did not request the last action.
func stampActor(wf *wfv1.Workflow, a *v1alpha1.WorkflowAction) {
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	wf.Labels[common.LabelKeyAction] = a.Spec.Action
	for creator, actor := range actorOfCreator {
		if v := a.Labels[creator]; v != "" {
			wf.Labels[actor] = v
		} else {
			delete(wf.Labels, actor)
		}
	}
}

// FailOrphans fails the pending actions of a workflow that does not exist. A workflow outside our
// selection (another controller instance's) exists on the server: its actions are left to that controller.
func (d *Drainer) FailOrphans(ctx context.Context, key string) error {
	pending := slices.DeleteFunc(d.actionsOf(key), func(a *v1alpha1.WorkflowAction) bool { return a.Status.Terminal() })
	if len(pending) == 0 {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(pending[0].Spec.WorkflowRef.Name); len(msgs) > 0 {
		// No workflow can ever have this name (e.g. "a/b", stored before the CRD validated it).
		var errs []error
		for _, a := range pending {
			errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, Outcome{Phase: v1alpha1.PhaseFailed, Reason: ReasonWorkflowNotFound,
				Message: truncate.String(fmt.Sprintf("workflowRef.name %q is not a valid workflow name, so no workflow can have it: %s",
					a.Spec.WorkflowRef.Name, strings.Join(msgs, "; ")), MaxMessageLength)})))
		}
		return errors.Join(errs...)
	}
	_, err := d.Workflows.Namespace(pending[0].Namespace).Get(ctx, pending[0].Spec.WorkflowRef.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil // not ours
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("checking whether workflow %s exists: %w", key, err)
	}
	var errs []error
	for _, a := range pending {
		errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, Outcome{Phase: v1alpha1.PhaseFailed,
			Reason: ReasonWorkflowNotFound, Message: fmt.Sprintf("workflow %s does not exist", a.Spec.WorkflowRef.Name)})))
	}
	return errors.Join(errs...)
}

// SettleCompleted reports recorded outcomes and fails new actions of a completed workflow, which is written
// again only by a Retry: records are the ones its last write stored. It stops at the first pending Retry and
// returns it; the caller applies it (ApplyToCompleted), and the actions after it meet the retried workflow.
func (d *Drainer) SettleCompleted(ctx context.Context, key string, wf *wfv1.Workflow, records []extstatus.AppliedAction) (*v1alpha1.WorkflowAction, error) {
	recorded := map[string]extstatus.AppliedAction{}
	for _, r := range d.trusted(wf, records) {
		recorded[string(r.UID)] = r
	}
	var errs []error
	for _, a := range d.actionsOf(key) {
		if a.Status.Terminal() {
			continue
		}
		r, isRecorded := recorded[string(a.UID)]
		switch {
		case !Targets(a, wf):
			errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, Outcome{Phase: v1alpha1.PhaseFailed, Reason: ReasonWorkflowNotFound,
				Message: fmt.Sprintf("workflow %s has UID %s, not %s", wf.Name, wf.UID, a.Spec.WorkflowRef.UID)})))
		case isRecorded:
			errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, Outcome{Phase: v1alpha1.ActionPhase(r.Outcome), Reason: r.Reason, Message: r.Message})))
		case a.Spec.Action == v1alpha1.ActionRetry:
			return a, errors.Join(errs...)
		default:
			errs = append(errs, outcomeErr(d.writeOutcome(ctx, a, Outcome{Phase: v1alpha1.PhaseFailed, Reason: ReasonWorkflowCompleted,
				Message: fmt.Sprintf("workflow %s is already %s", wf.Name, wf.Status.Phase)})))
		}
	}
	return nil, errors.Join(errs...)
}

// SettleUnreadable is SettleCompleted for a completed workflow whose nodes cannot be read (why), wf decoded
// without them: a Retry, which needs them, fails InvalidNodeTree instead of being returned. One Retry per
// call: its outcome's update event brings the next pass.
func (d *Drainer) SettleUnreadable(ctx context.Context, key string, wf *wfv1.Workflow, records []extstatus.AppliedAction, why error) error {
	retry, err := d.SettleCompleted(ctx, key, wf, records)
	if retry == nil {
		return err
	}
	out := failed(ReasonInvalidNodeTree, "cannot retry %s: its nodes cannot be read: %v", wf.Name, why)
	return errors.Join(err, outcomeErr(d.writeOutcome(ctx, retry, out)))
}

// ApplyToCompleted applies a Retry to a completed workflow in memory. Applied, it is recorded write-ahead
// in ext.AppliedActions like a drained action, and the caller persists the pass and then Reports; refused,
// nothing changed, so its outcome is written at once and applied is false. A Retry that rewrites the
// workflow is applied only if the admission policy that checks its creator admitted it (authorizeRewrite).
func (d *Drainer) ApplyToCompleted(ctx context.Context, key string, wf *wfv1.Workflow, ext *extstatus.Extensions, a *v1alpha1.WorkflowAction, now time.Time) (applied bool, err error) {
	out, err := d.authorizeRewrite(ctx, a)
	if err != nil {
		return false, err
	}
	if out.Phase == "" {
		out = Apply(wf, ext, a, metav1.NewTime(now))
	}
	d.Log.Info("applied workflow action", "workflow", key, "action", a.Name, "type", a.Spec.Action, "outcome", out.Phase, "reason", out.Reason)
	if out.Phase != v1alpha1.PhaseSucceeded {
		return false, outcomeErr(d.writeOutcome(ctx, a, out))
	}
	ext.AppliedActions = append(d.trusted(wf, ext.AppliedActions), d.newRecord(wf, a, out))
	stampActor(wf, a)
	return true, nil
}

// authorizeRewrite refuses a Retry that rewrites its workflow (RewritesWorkflow) unless RetryOverridesPolicy
// checked at its admission that its creator may update the workflow: the controller cannot know who that
// was. The zero Outcome lets the action be applied; an error is a failed read of the policy.
func (d *Drainer) authorizeRewrite(ctx context.Context, a *v1alpha1.WorkflowAction) (Outcome, error) {
	if !RewritesWorkflow(&a.Spec) {
		return Outcome{}, nil
	}
	verdict := admissionpolicy.Verdict{Policy: RetryOverridesPolicy,
		NotInForce: "no check of the admission policy " + RetryOverridesPolicy + " is configured"}
	if d.RetryPolicy != nil {
		var err error
		if verdict, err = d.RetryPolicy(ctx); err != nil {
			return Outcome{}, fmt.Errorf("checking whether Retry %s/%s was admitted by %s: %w", a.Namespace, a.Name, RetryOverridesPolicy, err)
		}
	}
	why := verdict.Admitted(a.CreationTimestamp.Time)
	if why == "" {
		return Outcome{}, nil
	}
	return failed(ReasonRetryOverridesNotAuthorized, "a Retry with parameters, restartSuccessful or a nodeFieldSelector rewrites workflow %s and runs it again, "+
		"which needs update on it, and only the admission policy %s checks that for the Retry's creator; but %s. "+
		"Retry without them, or install config/policy (kubectl apply -k config/default) and create the Retry again",
		a.Spec.WorkflowRef.Name, RetryOverridesPolicy, why), nil
}
