package cronworkflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// startRun starts the run scheduled at t through argo's gates, in argo's order: stop strategy, suspend,
// when, concurrency policy. An error is returned only for what a retry can fix (the API server's
// transient failures); the tick stays due until a pass succeeds, and its run's name makes the retry safe.
func (r *Reconciler) startRun(ctx context.Context, p *pass, t time.Time) error {
	cwf := p.cwf
	if r.checkStop(p) {
		p.report(func() { r.metrics.runs.WithLabelValues(outcomeStopped).Inc() })
		return nil
	}
	if cwf.Spec.Suspend {
		p.report(func() { r.metrics.runs.WithLabelValues(outcomeSuspended).Inc() }) // no Event: the user asked for it
		return nil
	}
	allowed, err := whenAllows(cwf)
	if err != nil {
		r.submissionError(p, fmt.Sprintf("run policy error: %s", err))
		return nil
	}
	if !allowed {
		r.skip(p, outcomeWhenFalse, fmt.Sprintf("when %q is false", cwf.Spec.When))
		return nil
	}
	decision, err := decideConcurrency(cwf.Spec.ConcurrencyPolicy, len(cwf.Status.Active))
	if err != nil {
		r.submissionError(p, fmt.Sprintf("run policy error: %s", err))
		return nil
	}
	if decision.policyApplied {
		p.report(func() {
			r.opts.Observer.ConcurrencyPolicyTriggered(cwf.Namespace, cwf.Name, string(cwf.Spec.ConcurrencyPolicy))
		})
	}
	if !decision.start {
		r.skip(p, outcomeForbidden, fmt.Sprintf("concurrencyPolicy Forbid: %d run(s) still active", len(cwf.Status.Active)))
		return nil
	}
	if decision.terminateActive {
		if err := r.terminateActive(ctx, cwf); err != nil {
			return err
		}
	}
	return r.submit(ctx, p, t)
}

func (r *Reconciler) skip(p *pass, outcome, why string) {
	p.report(func() {
		r.metrics.runs.WithLabelValues(outcome).Inc()
		r.recorder.Eventf(p.cwf, corev1.EventTypeNormal, ReasonRunSkipped, "scheduled run not started: %s", why)
	})
}

// terminateActive sets spec.shutdown=Terminate on every active run (argo's Replace); runs already
// shutting down or gone are left as they are.
func (r *Reconciler) terminateActive(ctx context.Context, cwf *wfv1.CronWorkflow) error {
	client := r.argo.ArgoprojV1alpha1().Workflows(cwf.Namespace)
	patch := []byte(`{"spec":{"shutdown":"` + string(wfv1.ShutdownStrategyTerminate) + `"}}`)
	var names []string
	trust := r.trustOf(cwf)
	for _, ref := range cwf.Status.Active {
		wf, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && (wf.UID != ref.UID || wf.Spec.Shutdown != "" || wf.Status.Fulfilled())) {
			continue
		}
		if err == nil && (!ownedBy(wf, cwf) || trust.verdict(wf, r.createdHere(wf.UID)) == runForged) {
			// Only a run is terminated: status.active is the CronWorkflow writer's to fill.
			r.reportIgnoredActive(cwf, ref)
			continue
		}
		if err != nil {
			return fmt.Errorf("reading active run %s/%s to replace it: %w", cwf.Namespace, ref.Name, err)
		}
		_, err = client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("terminating active run %s/%s (concurrencyPolicy Replace): %w", cwf.Namespace, ref.Name, err)
		}
		names = append(names, ref.Name)
		r.metrics.terminated.Inc()
	}
	if len(names) > 0 {
		r.recorder.Eventf(cwf, corev1.EventTypeNormal, ReasonRunsReplaced, "concurrencyPolicy Replace: terminated %v", names)
	}
	return nil
}

// submit creates the run. AlreadyExists for a run of this CronWorkflow means another pass or controller
// created it: it is recorded, never started twice (and counted as created if this process created it in a
// pass that failed later).
func (r *Reconciler) submit(ctx context.Context, p *pass, t time.Time) error {
	cwf := p.cwf
	wf := newRun(cwf, t)
	r.sealRun(cwf, wf)
	client := r.argo.ArgoprojV1alpha1().Workflows(cwf.Namespace)
	created, err := client.Create(ctx, wf, metav1.CreateOptions{})
	outcome := outcomeCreated
	if apierrors.IsAlreadyExists(err) {
		created, err = client.Get(ctx, wf.Name, metav1.GetOptions{})
		if err == nil && !r.createdHere(created.UID) {
			outcome = outcomeAlreadyExists
		}
		if err == nil && (!ownedBy(created, cwf) || r.trustOf(cwf).verdict(created, r.createdHere(created.UID)) == runForged) {
			// Someone else took the name of this tick's run before it was created.
			r.submissionError(p, fmt.Sprintf("Failed to submit Workflow: workflow %s exists and is not a run of this CronWorkflow", wf.Name))
			return nil
		}
	}
	if err != nil {
		if retryable(err) {
			return fmt.Errorf("creating run %s/%s: %w", cwf.Namespace, wf.Name, err)
		}
		r.submissionError(p, fmt.Sprintf("Failed to submit Workflow: %s", err))
		return nil
	}
	if outcome == outcomeCreated {
		r.rememberCreated(created.UID)
	}
	if r.opts.RecordKey != nil && created.Annotations[AnnotationRunUIDSeal] == "" {
		p.toSeal = append(p.toSeal, created)
	}
	p.count(created.UID)
	// Listed even when another controller's run already completed: the next pass counts it once, on
	// its way out of active (a completed run never listed would never be counted). A run the status
	// already recorded (the write that listed it set lastScheduledTime to its tick or later) and no
	// longer lists has been counted: listing it again would count it twice.
	recorded := cwf.Status.LastScheduledTime != nil && !cwf.Status.LastScheduledTime.Time.Before(t)
	if !cwf.Status.HasActiveUID(created.UID) && !(recorded && created.Status.Fulfilled()) {
		cwf.Status.Active = append(cwf.Status.Active, activeRef(created))
	}
	// As argo's run: the phase and the schedule in force are recorded when a run starts, not on first sight.
	cwf.Status.Phase = wfv1.ActivePhase
	if cwf.Annotations == nil {
		cwf.Annotations = map[string]string{}
	}
	cwf.Annotations[annotationLastUsedSchedule] = scheduleKey(&cwf.Spec)
	cwf.Status.LastScheduledTime = &metav1.Time{Time: t}
	cwf.Status.Conditions.RemoveCondition(wfv1.ConditionTypeSubmissionError)
	p.report(func() { r.reportRun(cwf, created, outcome, t.UTC().Format(time.RFC3339)) })
	return nil
}

// claimCreated reports the runs this process created in a pass whose status write then failed, when a
// later pass finds them recorded (by the other writer that won the conflict) and so never submits them
// again: each run this process created is counted as created once.
func (r *Reconciler) claimCreated(p *pass) {
	for _, run := range p.runs {
		if !r.createdHere(run.UID) || p.counted[run.UID] {
			continue
		}
		p.count(run.UID)
		p.report(func() {
			r.reportRun(p.cwf, run, outcomeCreated, run.Annotations[common.AnnotationKeyCronWfScheduledTime])
		})
	}
}

// reportRun is what a pass reports once its status write landed for a run it submitted or claimed: the
// trigger, the outcome, and the RunStarted Event (naming the tick it was scheduled at) when this process
// created the run.
func (r *Reconciler) reportRun(cwf *wfv1.CronWorkflow, run *wfv1.Workflow, outcome, scheduled string) {
	r.forgetCreated(run.UID)
	r.opts.Observer.Triggered(cwf.Namespace, cwf.Name)
	r.metrics.runs.WithLabelValues(outcome).Inc()
	if outcome == outcomeCreated {
		r.recorder.Eventf(cwf, corev1.EventTypeNormal, ReasonRunStarted, "started workflow %s scheduled at %s", run.Name, scheduled)
	}
}

func (p *pass) count(uid types.UID) {
	if p.counted == nil {
		p.counted = map[types.UID]bool{}
	}
	p.counted[uid] = true
}

// createdHere: this process created the run in a pass whose report is still due.
func (r *Reconciler) createdHere(uid types.UID) bool {
	r.createdMu.Lock()
	defer r.createdMu.Unlock()
	_, ok := r.created[uid]
	return ok
}

func (r *Reconciler) rememberCreated(uid types.UID) {
	r.createdMu.Lock()
	defer r.createdMu.Unlock()
	r.created[uid] = struct{}{}
}

func (r *Reconciler) forgetCreated(uid types.UID) {
	r.createdMu.Lock()
	defer r.createdMu.Unlock()
	delete(r.created, uid)
}

// retryable: the API server may accept the same request later.
func retryable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err) ||
		apierrors.IsUnexpectedServerError(err) || !isStatusError(err)
}

func isStatusError(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}
