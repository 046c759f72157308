package cronworkflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/provenance"
)

// Anyone who may create a Workflow can give it a controller ownerReference to a CronWorkflow: a forged
// finished run would push the real ones past the history limit (deleted by the controller, which the
// forger may not do), a forged never-ending one would hold a Forbid CronWorkflow for ever. So a run counts
// only when the reconciler can prove it created it (DESIGN.md I9), by two seals of the record key:
const (
	// AnnotationRunSeal seals (CronWorkflow UID, run name); it is set on the run as created. It proves the
	// reconciler made the object of that name, which only matters until the run's UID is sealed: a copy of a
	// deleted run carries it too.
	AnnotationRunSeal = "wfguard.io/run-seal"
	// AnnotationRunUIDSeal seals (CronWorkflow UID, run name, run UID), set right after the create: the
	// server-assigned UID makes it a proof no copy can carry.
	AnnotationRunUIDSeal = "wfguard.io/run-uid-seal"
	// AnnotationSealedSince is when the reconciler first decided the CronWorkflow with a record key (RFC 3339,
	// set then): runs created before it are legacy, argo's or an earlier version's, and count as argo counted
	// them; unsealed runs created later are forged.
	AnnotationSealedSince = "wfguard.io/runs-sealed-since"
)

// ReasonRunIgnored (Warning): a workflow claims to be a run of the CronWorkflow that the reconciler did not
// create; concurrencyPolicy and the history limits ignore it.
const ReasonRunIgnored = "RunIgnored"

// runTrust tells the runs of one CronWorkflow the reconciler created from those it did not.
type runTrust struct {
	key   *provenance.Key
	cwf   *wfv1.CronWorkflow
	since time.Time // AnnotationSealedSince; zero when not set yet
}

func (r *Reconciler) trustOf(cwf *wfv1.CronWorkflow) runTrust {
	t := runTrust{key: r.opts.RecordKey, cwf: cwf}
	if v, ok := cwf.Annotations[AnnotationSealedSince]; ok {
		if since, err := time.Parse(time.RFC3339, v); err == nil {
			t.since = since
		}
	}
	return t
}

// runVerdict is what a pass makes of one run.
type runVerdict int

const (
	runForged runVerdict = iota
	runOwn
	// runOwnToSeal: the reconciler created it (its name seal, for a tick not yet recorded; or this process),
	// and its UID seal is still to be set.
	runOwnToSeal
)

func (t runTrust) verdict(wf *wfv1.Workflow, createdHere bool) runVerdict {
	if t.key == nil {
		return runOwn
	}
	name, uid := wf.Name, string(wf.UID)
	cron := string(t.cwf.UID)
	switch {
	case t.key.Verify(wf.Annotations[AnnotationRunUIDSeal], provenance.PurposeCronRun, cron, name, uid):
		return runOwn
	case createdHere:
		return runOwnToSeal
	case t.key.Verify(wf.Annotations[AnnotationRunSeal], provenance.PurposeCronRun, cron, name) && t.unrecordedTick(name):
		return runOwnToSeal // created before a crash, or by another replica, before the status recorded it
	case !t.since.IsZero() && wf.CreationTimestamp.Time.Before(t.since):
		return runOwn // legacy
	}
	return runForged
}

// unrecordedTick reports whether the run named name is for a tick after status.lastScheduledTime: a run
// the reconciler created whose status write did not happen. An older name sealed so is a copy of a run
// that was recorded, and deleted since.
func (t runTrust) unrecordedTick(name string) bool {
	unix, err := strconv.ParseInt(strings.TrimPrefix(name, t.cwf.Name+"-"), 10, 64)
	if err != nil {
		return false
	}
	last := t.cwf.Status.LastScheduledTime
	return last == nil || time.Unix(unix, 0).After(last.Time)
}

// sealRun is the name seal a new run carries.
func (r *Reconciler) sealRun(cwf *wfv1.CronWorkflow, run *wfv1.Workflow) {
	if r.opts.RecordKey == nil {
		return
	}
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[AnnotationRunSeal] = r.opts.RecordKey.Seal(provenance.PurposeCronRun, string(cwf.UID), run.Name)
}

// sealRunUID sets the UID seal on a run the reconciler created.
func (r *Reconciler) sealRunUID(ctx context.Context, cwf *wfv1.CronWorkflow, run *wfv1.Workflow) error {
	seal := r.opts.RecordKey.Seal(provenance.PurposeCronRun, string(cwf.UID), run.Name, string(run.UID))
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         run.UID, // a precondition: never seal a namesake that replaced it
		"annotations": map[string]string{AnnotationRunUIDSeal: seal}}})
	if err != nil {
		return err
	}
	_, err = r.argo.ArgoprojV1alpha1().Workflows(run.Namespace).Patch(ctx, run.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("sealing run %s/%s of cronworkflow %s: %w", run.Namespace, run.Name, cwf.Name, err)
	}
	return nil
}

// reportIgnoredRun reports, once per run, a workflow posing as a run of cwf.
func (r *Reconciler) reportIgnoredRun(cwf *wfv1.CronWorkflow, wf *wfv1.Workflow) {
	r.reportIgnored(cwf, wf.UID, wf.Name, "workflow %s names this CronWorkflow as its controller, but the controller did not create it (no valid seal): concurrencyPolicy and the history limits ignore it")
}

// reportIgnoredActive reports, once per entry, a status.active entry that names no run of cwf.
func (r *Reconciler) reportIgnoredActive(cwf *wfv1.CronWorkflow, ref corev1.ObjectReference) {
	r.reportIgnored(cwf, ref.UID, ref.Name, "status.active lists %s, which is not a run of this CronWorkflow: the entry is dropped, and concurrencyPolicy ignores it")
}

func (r *Reconciler) reportIgnored(cwf *wfv1.CronWorkflow, uid types.UID, name, format string) {
	if !r.ignoredRuns.First(string(cwf.UID) + "/" + string(uid) + "/" + name) {
		return
	}
	r.metrics.ignored.Inc()
	r.log.Warn("ignoring a workflow that poses as a cronworkflow run", "cronworkflow", cwf.Namespace+"/"+cwf.Name, "workflow", name)
	r.recorder.Eventf(cwf, corev1.EventTypeWarning, ReasonRunIgnored, format, name)
}
