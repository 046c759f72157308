package cronworkflow

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/resourceversion"
	"github.com/wfguard/wfguard/internal/truncate"
)

// annotationLastUsedSchedule is argo's record of the schedules a CronWorkflow was last scheduled with: a
// CronWorkflow whose schedules changed while no controller ran gets no missed run.
const annotationLastUsedSchedule = "cronworkflows.argoproj.io/last-used-schedule"

// passTimeout bounds the API calls of one reconcile.
const passTimeout = time.Minute

// tracking is what this process knows of a CronWorkflow's schedule: since when it has been watching it.
// Ticks at or before since were decided already (or predate this process: argo's missed-run rule covers those).
type tracking struct {
	uid      types.UID
	schedule string
	since    time.Time
}

// pass is one reconcile of one CronWorkflow: the copy being changed and the decisions taken.
type pass struct {
	cwf  *wfv1.CronWorkflow
	orig *wfv1.CronWorkflow
	now  time.Time
	runs []*wfv1.Workflow
	// lookupsLeft: status.active holds entries this pass did not read (maxActiveLookups); another pass reads them.
	lookupsLeft bool
	// toSeal are runs the reconciler created whose UID seal is still to be set (before the status write).
	toSeal   []*wfv1.Workflow
	parsed   schedules
	watching tracking // what tracked becomes once the pass succeeds
	// reports are the metrics, Events and observer calls of the pass's decisions, made once its status write
	// succeeded: a pass retried after a conflict decides again and must not count twice.
	reports []func()
	// counted are the runs whose creation this pass reports (submit, claimCreated).
	counted map[types.UID]bool
}

func (p *pass) report(f func()) { p.reports = append(p.reports, f) }

func (r *Reconciler) sync(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, passTimeout)
	defer cancel()
	obj, exists, err := r.crons.GetIndexer().GetByKey(key)
	if err != nil {
		return fmt.Errorf("reading cronworkflow %s from the cache: %w", key, err)
	}
	if !exists {
		r.forget(key)
		r.forgetWrite(key)
		return nil
	}
	cached, ok := obj.(*wfv1.CronWorkflow)
	if !ok {
		return fmt.Errorf("cronworkflow %s: cached object is a %T", key, obj)
	}
	if r.stale(key, cached) {
		// Deciding from it could miss a run our last write recorded active (Forbid would start a second)
		// and conflict on the write; the echo of that write brings the key back.
		r.log.Debug("skipping a cache copy older than our last write", "cronworkflow", key, "resourceVersion", cached.ResourceVersion)
		return nil
	}
	p := &pass{cwf: cached.DeepCopy(), orig: cached, now: r.clock.Now()}
	p.runs, p.toSeal = r.runsOf(cached)
	r.markSealedSince(p)
	if err := r.decide(ctx, key, p); err != nil {
		return err
	}
	if err := r.sealRuns(ctx, p); err != nil {
		return err
	}
	r.claimCreated(p)
	if err := r.persist(ctx, p); err != nil {
		return err
	}
	for _, report := range p.reports {
		report()
	}
	r.commit(key, p)
	if err := r.pruneHistory(ctx, p); err != nil {
		return err
	}
	if r.opts.AfterSync != nil {
		r.opts.AfterSync(key, cached.ResourceVersion)
	}
	if p.lookupsLeft {
		r.queue.AddAfter(key, time.Second)
	}
	return nil
}

// decide brings the status up to date and starts the run that is due, if any.
func (r *Reconciler) decide(ctx context.Context, key string, p *pass) error {
	completed := reconcileActive(&p.cwf.Status, p.runs, r.lookupRun(ctx, p))
	parsed, err := r.validate(p)
	if err != nil {
		r.specError(p, err.Error())
		return nil
	}
	p.parsed = parsed
	p.cwf.Status.Conditions.RemoveCondition(wfv1.ConditionTypeSpecError)
	if completed && !stopped(p.cwf) && r.checkStop(p) {
		return nil
	}
	if stopped(p.cwf) {
		return nil
	}
	due, ok := r.dueRun(key, p)
	if !ok {
		return nil
	}
	return r.startRun(ctx, p, due)
}

// validate checks the CronWorkflow's own fields, then, as argo does on every reconcile, the Workflow its
// runs would be.
func (r *Reconciler) validate(p *pass) (schedules, error) {
	parsed, err := validateSpec(p.cwf)
	if err != nil || r.opts.ValidateWorkflow == nil {
		return parsed, err
	}
	if err := r.opts.ValidateWorkflow(newRun(p.cwf, p.now)); err != nil {
		return nil, fmt.Errorf("cannot validate Workflow: %w", err)
	}
	return parsed, nil
}

// stopped: the stop strategy was reached (argo's completed label, or phase Stopped).
func stopped(cwf *wfv1.CronWorkflow) bool {
	return cwf.Labels[common.LabelKeyCronWorkflowCompleted] == "true" || cwf.Status.Phase == wfv1.StoppedPhase
}

// checkStop evaluates the stop strategy and marks the CronWorkflow stopped when it holds; it reports
// whether scheduling must end here (stopped, or the expression is broken: a SpecError).
func (r *Reconciler) checkStop(p *pass) bool {
	cwf := p.cwf
	stop, err := stopReached(cwf)
	if err != nil {
		r.specError(p, fmt.Sprintf("failed to check CronWorkflow '%s' stopping condition: %s", cwf.Name, err))
		return true
	}
	if stop {
		markStopped(cwf)
		p.report(func() {
			r.recorder.Eventf(cwf, corev1.EventTypeNormal, ReasonStopped, "stopStrategy.expression %q is true: no more runs are scheduled", cwf.Spec.StopStrategy.Expression)
		})
	}
	return stop
}

// dueRun is the scheduled time of the run to start now, if any: the latest tick since the last decision,
// else argo's missed-run rule (a tick missed while no controller ran, or one that started no run, still
// within startingDeadlineSeconds). Ticks from before a change of the schedules are never caught up.
func (r *Reconciler) dueRun(key string, p *pass) (time.Time, bool) {
	schedule := scheduleKey(&p.cwf.Spec)
	p.watching = tracking{uid: p.cwf.UID, schedule: schedule, since: p.now}
	r.trackedMu.Lock()
	known, ok := r.tracked[key]
	r.trackedMu.Unlock()
	// argo records the schedule only when a run starts (startRun), so a run's tick is caught up only under
	// the schedule that started the previous run.
	unchanged := p.cwf.Annotations[annotationLastUsedSchedule] == schedule
	last := p.cwf.Status.LastScheduledTime
	if !ok || known.uid != p.cwf.UID || known.schedule != schedule {
		if !ok && unchanged && last != nil {
			return p.parsed.missedRun(last.Time, p.cwf.Spec.StartingDeadlineSeconds, p.now)
		}
		return time.Time{}, false
	}
	after := known.since
	if last != nil && last.After(after) {
		after = last.Time
	}
	if due, ok := p.parsed.latestDue(after, p.now); ok {
		return due, true
	}
	// As argo, a tick that started no run (Forbid, suspend, when) is tried again by later reconciles while
	// within startingDeadlineSeconds of it.
	if last != nil {
		return p.parsed.missedRun(last.Time, p.cwf.Spec.StartingDeadlineSeconds, p.now)
	}
	return time.Time{}, false
}

// commit records that the pass's ticks were decided and arms the alarm for the next one.
func (r *Reconciler) commit(key string, p *pass) {
	if p.parsed == nil || stopped(p.cwf) {
		r.forget(key)
		return
	}
	r.trackedMu.Lock()
	r.tracked[key] = p.watching
	r.trackedMu.Unlock()
	r.alarms.set(key, p.parsed.next(p.now))
}

func (r *Reconciler) forget(key string) {
	r.trackedMu.Lock()
	delete(r.tracked, key)
	r.trackedMu.Unlock()
	r.alarms.set(key, time.Time{})
}

// runsOf are the cached runs the reconciler created for this CronWorkflow (same UID: not a deleted
// namesake's), and those of them whose UID seal is still to be set. Workflows posing as its runs are
// reported and left out (trust.go).
func (r *Reconciler) runsOf(cwf *wfv1.CronWorkflow) (own, toSeal []*wfv1.Workflow) {
	objs, err := r.runs.GetIndexer().ByIndex(indexCron, cwf.Namespace+"/"+cwf.Name)
	if err != nil {
		r.log.Error("listing the runs of a cronworkflow", "cronworkflow", cwf.Namespace+"/"+cwf.Name, "err", err)
		return nil, nil
	}
	trust := r.trustOf(cwf)
	for _, obj := range objs {
		wf, ok := obj.(*wfv1.Workflow)
		if !ok || !ownedBy(wf, cwf) {
			continue
		}
		switch trust.verdict(wf, r.createdHere(wf.UID)) {
		case runOwn:
			own = append(own, wf)
		case runOwnToSeal:
			own, toSeal = append(own, wf), append(toSeal, wf)
		default:
			r.reportIgnoredRun(cwf, wf)
		}
	}
	return own, toSeal
}

// markSealedSince dates, on the first pass with a record key, from when unsealed runs are forged.
func (r *Reconciler) markSealedSince(p *pass) {
	if r.opts.RecordKey == nil {
		return
	}
	if _, ok := p.cwf.Annotations[AnnotationSealedSince]; ok {
		return
	}
	if p.cwf.Annotations == nil {
		p.cwf.Annotations = map[string]string{}
	}
	p.cwf.Annotations[AnnotationSealedSince] = r.opts.WallClock.Now().UTC().Format(time.RFC3339)
}

// sealRuns sets the UID seal of the runs that lack it, before the status write lists them.
func (r *Reconciler) sealRuns(ctx context.Context, p *pass) error {
	if r.opts.RecordKey == nil {
		return nil
	}
	for _, run := range p.toSeal {
		if err := r.sealRunUID(ctx, p.cwf, run); err != nil {
			return err
		}
	}
	return nil
}

// lookupRun reads an active run the cache does not hold (yet) from the API server: only a NotFound, a
// namesake with another UID, or a workflow the reconciler did not create (status.active is the
// CronWorkflow writer's to fill: a listed workflow is not proof of a run) counts as gone; any other error
// keeps it active. An entry that cannot be a run's name goes without a read, and at most
// maxActiveLookups are read per pass: the rest wait for the next one.
func (r *Reconciler) lookupRun(ctx context.Context, p *pass) runLookup {
	namespace, trust, reads := p.cwf.Namespace, r.trustOf(p.cwf), 0
	return func(ref corev1.ObjectReference) (*wfv1.Workflow, bool) {
		if !isRunName(p.cwf.Name, ref.Name) {
			r.reportIgnoredActive(p.cwf, ref)
			return nil, true
		}
		if reads >= maxActiveLookups {
			p.lookupsLeft = true
			return nil, false
		}
		reads++
		wf, err := r.argo.ArgoprojV1alpha1().Workflows(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, true
		case err != nil:
			r.log.Warn("reading an active cronworkflow run; keeping it active", "workflow", namespace+"/"+ref.Name, "err", err)
			return nil, false
		case wf.UID != ref.UID:
			return nil, true
		case !ownedBy(wf, p.cwf) || trust.verdict(wf, r.createdHere(wf.UID)) == runForged:
			r.reportIgnoredActive(p.cwf, ref)
			return nil, true
		}
		return wf, false
	}
}

// maxActiveLookups bounds the reads of status.active entries the cache does not hold, per pass.
const maxActiveLookups = 10

// isRunName reports whether name is of a run of the CronWorkflow cron: <cron>-<unix seconds>.
func isRunName(cron, name string) bool {
	rest, ok := strings.CutPrefix(name, cron+"-")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.ParseUint(rest, 10, 63)
	return err == nil
}

// specError sets the SpecError condition; the Event and the observer hear of it only when the stored copy
// lacks it or has another message, so an unchanged invalid CronWorkflow is not reported on every pass.
func (r *Reconciler) specError(p *pass, message string) {
	cwf := p.cwf
	setCondition(&cwf.Status, wfv1.ConditionTypeSpecError, message)
	if prev := conditionOf(&p.orig.Status, wfv1.ConditionTypeSpecError); prev != nil && prev.Message == message {
		p.report(func() { r.metrics.runs.WithLabelValues(outcomeSpecError).Inc() })
		return
	}
	p.report(func() {
		r.metrics.runs.WithLabelValues(outcomeSpecError).Inc()
		r.opts.Observer.SpecError(cwf.Namespace, cwf.Name)
		r.recorder.Event(cwf, corev1.EventTypeWarning, ReasonSpecError, message)
	})
	r.log.Warn("invalid cronworkflow", "cronworkflow", cwf.Namespace+"/"+cwf.Name, "err", message)
}

// submissionError sets the SubmissionError condition and counts a failed run, as argo does.
func (r *Reconciler) submissionError(p *pass, message string) {
	cwf := p.cwf
	setCondition(&cwf.Status, wfv1.ConditionTypeSubmissionError, message)
	cwf.Status.Failed++
	p.report(func() {
		r.metrics.runs.WithLabelValues(outcomeSubmissionError).Inc()
		r.opts.Observer.SubmissionError(cwf.Namespace, cwf.Name)
		r.recorder.Event(cwf, corev1.EventTypeWarning, ReasonSubmissionError, message)
	})
	r.log.Warn("cronworkflow run not submitted", "cronworkflow", cwf.Namespace+"/"+cwf.Name, "err", message)
}

func conditionOf(status *wfv1.CronWorkflowStatus, t wfv1.ConditionType) *wfv1.Condition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// persist writes the pass's status, labels and annotations when they changed. The Update writes the status
// too when the CRD has no status subresource (argo's CRD); when it has one, the status follows with an
// UpdateStatus. A conflict is returned: the pass runs again on the fresh copy.
func (r *Reconciler) persist(ctx context.Context, p *pass) error {
	if equality.Semantic.DeepEqual(p.orig.Status, p.cwf.Status) && maps.Equal(p.orig.Labels, p.cwf.Labels) &&
		maps.Equal(p.orig.Annotations, p.cwf.Annotations) {
		return nil
	}
	client := r.argo.ArgoprojV1alpha1().CronWorkflows(p.cwf.Namespace)
	updated, err := client.Update(ctx, p.cwf, metav1.UpdateOptions{})
	if err != nil {
		r.reportUnstorable(p, err)
		return fmt.Errorf("updating cronworkflow %s/%s: %w", p.cwf.Namespace, p.cwf.Name, err)
	}
	r.recordWrite(updated)
	if equality.Semantic.DeepEqual(updated.Status, p.cwf.Status) {
		return nil
	}
	updated.Status = p.cwf.Status
	stored := &wfv1.CronWorkflow{}
	err = r.argo.ArgoprojV1alpha1().RESTClient().Put().Namespace(updated.Namespace).Resource("cronworkflows").
		Name(updated.Name).SubResource("status").Body(updated).Do(ctx).Into(stored)
	if err != nil {
		return fmt.Errorf("updating the status of cronworkflow %s/%s: %w", p.cwf.Namespace, p.cwf.Name, err)
	}
	r.recordWrite(stored)
	return nil
}

// reportUnstorable records, once per version of the CronWorkflow, a write the API server will never accept
// (too large, invalid: e.g. annotations over the limit once the reconciler's are added). The pass is retried
// with backoff like any failed write; the Event is what keeps the wedge from being silent (I10).
func (r *Reconciler) reportUnstorable(p *pass, err error) {
	if _, permanent := apierror.Refused(err); !permanent || !r.unstorable.First(string(p.orig.UID)+"/"+p.orig.ResourceVersion) {
		return
	}
	r.recorder.Eventf(p.orig, corev1.EventTypeWarning, ReasonStatusNotStored,
		"the controller cannot store this CronWorkflow's status (%s): nothing is scheduled until the object is fixed", truncate.String(err.Error(), 512))
}

// lastWrite is the UID and resourceVersion of our last write of a CronWorkflow.
type lastWrite struct {
	uid             types.UID
	resourceVersion string
}

func (r *Reconciler) recordWrite(cwf *wfv1.CronWorkflow) {
	r.writtenMu.Lock()
	defer r.writtenMu.Unlock()
	r.written[cwf.Namespace+"/"+cwf.Name] = lastWrite{uid: cwf.UID, resourceVersion: cwf.ResourceVersion}
}

func (r *Reconciler) forgetWrite(key string) {
	r.writtenMu.Lock()
	defer r.writtenMu.Unlock()
	delete(r.written, key)
}

// stale reports whether the cache copy is older than our last write of the same CronWorkflow.
func (r *Reconciler) stale(key string, cached *wfv1.CronWorkflow) bool {
	r.writtenMu.Lock()
	last, ok := r.written[key]
	r.writtenMu.Unlock()
	return ok && last.uid == cached.UID && resourceversion.Compare(cached.ResourceVersion, last.resourceVersion) < 0
}

// pruneHistory deletes the completed runs beyond the history limits (after the status counted them).
func (r *Reconciler) pruneHistory(ctx context.Context, p *pass) error {
	client := r.argo.ArgoprojV1alpha1().Workflows(p.cwf.Namespace)
	for _, wf := range runsBeyondHistory(p.runs, &p.cwf.Spec) {
		if wf.DeletionTimestamp != nil {
			continue // deleted already, held by a finalizer
		}
		uid := wf.UID
		err := client.Delete(ctx, wf.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting workflow %s/%s beyond the history limit: %w", wf.Namespace, wf.Name, err)
		}
		if err == nil {
			r.metrics.pruned.Inc()
		}
	}
	return nil
}
