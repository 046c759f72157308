package actions

import (
	"crypto/sha256"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/provenance"
)

// ReasonRecordIgnored is the Warning Event on a workflow whose status (or its annotation mirror) holds a
// write-ahead entry the controller did not write: its action is applied as if it were not recorded.
const ReasonRecordIgnored = "WorkflowActionRecordIgnored"

// newRecord is the write-ahead entry of action a applied to wf with outcome out, sealed when the drainer
// has a key.
func (d *Drainer) newRecord(wf *wfv1.Workflow, a *v1alpha1.WorkflowAction, out Outcome) extstatus.AppliedAction {
	r := extstatus.AppliedAction{UID: a.UID, Name: a.Name, Outcome: string(out.Phase), Reason: out.Reason, Message: out.Message}
	if d.Key != nil {
		r.Seal = d.Key.Seal(provenance.PurposeAppliedAction, recordFields(wf.UID, r)...)
	}
	return r
}

// recordFields are what an entry's seal vouches for. The message is not among them: the annotation mirror
// drops it (extstatus.LostMessage), and it decides nothing.
func recordFields(workflow types.UID, r extstatus.AppliedAction) []string {
	return []string{string(workflow), string(r.UID), r.Name, r.Outcome, r.Reason}
}

// trusted is records without the entries the controller did not write. Anyone who may update a Workflow
// may write its status and annotations: a forged entry would make its action be reported with the forged
// outcome and never applied (a Terminate "applied" while the workflow runs on), or fill the bounded record
// so that real actions wait. Each ignored entry is reported once. Without a key every entry is trusted.
func (d *Drainer) trusted(wf *wfv1.Workflow, records []extstatus.AppliedAction) []extstatus.AppliedAction {
	if d.Key == nil || len(records) == 0 {
		return records
	}
	var out []extstatus.AppliedAction
	for _, r := range records {
		if d.Key.Verify(r.Seal, provenance.PurposeAppliedAction, recordFields(wf.UID, r)...) {
			out = append(out, r)
			continue
		}
		// Keyed by a digest: every field of a forged entry is its writer's, lengths included.
		digest := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s", wf.UID, r.UID, r.Outcome, r.Seal)))
		if !d.ignored.First(string(digest[:])) {
			continue
		}
		d.Metrics.recordsIgnored.Inc()
		d.Log.Warn("ignoring a write-ahead action record the controller did not write", "workflow", wf.Namespace+"/"+wf.Name,
			"action", quoted(r.Name), "actionUID", quoted(string(r.UID)), "outcome", quoted(r.Outcome))
		d.Recorder.Eventf(wf, corev1.EventTypeWarning, ReasonRecordIgnored,
			"The record of action %s (uid %s, outcome %s) in status.appliedActions or its annotation mirror was not written by the controller (no valid seal): ignored; the action is applied as if it were not recorded",
			quoted(r.Name), quoted(string(r.UID)), quoted(r.Outcome))
	}
	return out
}
