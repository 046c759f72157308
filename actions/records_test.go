package actions

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/provenance"
)

func testKey(t *testing.T, b byte) *provenance.Key {
	t.Helper()
	k, err := provenance.NewKey(bytes.Repeat([]byte{b}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sealedDrainer is drainerOver with a key, metrics, an event log and a fake action API.
func sealedDrainer(t *testing.T, list ...*v1alpha1.WorkflowAction) (*Drainer, *actionAPI) {
	t.Helper()
	d := drainerOver(t, list...)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	api := fakeActionAPI(t)
	d.Key, d.Metrics, d.Recorder, d.Client, d.Clock, d.Log = testKey(t, 1), m, &eventLog{}, api.client, clocktesting.NewFakePassiveClock(t0), slog.New(slog.DiscardHandler)
	return d, api
}

// recordOf is the entry a drainer with key k would have written for a on wf.
func recordOf(k *provenance.Key, wf *wfv1.Workflow, a *v1alpha1.WorkflowAction, outcome v1alpha1.ActionPhase) extstatus.AppliedAction {
	r := extstatus.AppliedAction{UID: a.UID, Name: a.Name, Outcome: string(outcome), Reason: ReasonApplied}
	if k != nil {
		r.Seal = k.Seal(provenance.PurposeAppliedAction, recordFields(wf.UID, r)...)
	}
	return r
}

// Issue #44 items 3 and 11(c): the record's bound was freed only by a pass that also wrote something else,
// and an entry anyone who may update the workflow could write decided that its action was applied.
func TestOnlyRecordsTheControllerWroteCountAndReportedOnesMakeRoomFirst(t *testing.T) {
	wf := running()
	terminate := action("terminate", v1alpha1.ActionTerminate, t0.Add(2), "")
	for _, tc := range []struct {
		sentence string
		// records builds the stored entries, given the drainer's key and the actions before terminate.
		records         func(k *provenance.Key, before []*v1alpha1.WorkflowAction) []extstatus.AppliedAction
		beforeTerminal  bool // the actions before terminate are terminal in the cache
		wantApplied     bool // terminate is applied in this pass
		wantIgnored     float64
		wantRecordCount int
	}{
		{sentence: "a full record of actions already reported is pruned first, so the next action is applied in the same pass",
			records: func(k *provenance.Key, before []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				var out []extstatus.AppliedAction
				for _, a := range before {
					out = append(out, recordOf(k, wf, a, v1alpha1.PhaseSucceeded))
				}
				return out
			}, beforeTerminal: true, wantApplied: true, wantRecordCount: 1},
		{sentence: "150 entries the controller did not write are ignored and the action after them is applied",
			records: func(_ *provenance.Key, before []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				var out []extstatus.AppliedAction
				for i := range 150 {
					out = append(out, extstatus.AppliedAction{UID: types.UID(fmt.Sprint("forged-", i)), Name: "forged", Outcome: "Succeeded"})
				}
				return out
			}, wantApplied: true, wantIgnored: 150, wantRecordCount: 1},
		{sentence: "a forged Succeeded entry for the pending Terminate does not stand for its effect: it is applied",
			records: func(_ *provenance.Key, _ []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				return []extstatus.AppliedAction{{UID: terminate.UID, Name: terminate.Name, Outcome: "Succeeded", Reason: ReasonApplied}}
			}, wantApplied: true, wantIgnored: 1, wantRecordCount: 1},
		{sentence: "an entry sealed by another controller's key is forged too",
			records: func(_ *provenance.Key, _ []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				return []extstatus.AppliedAction{recordOf(testKey(t, 2), wf, terminate, v1alpha1.PhaseSucceeded)}
			}, wantApplied: true, wantIgnored: 1, wantRecordCount: 1},
		{sentence: "an entry sealed for another workflow is forged too",
			records: func(k *provenance.Key, _ []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				other := running()
				other.UID = "other-uid"
				return []extstatus.AppliedAction{recordOf(k, other, terminate, v1alpha1.PhaseSucceeded)}
			}, wantApplied: true, wantIgnored: 1, wantRecordCount: 1},
		{sentence: "the controller's own entry for the Terminate keeps it from being applied twice",
			records: func(k *provenance.Key, _ []*v1alpha1.WorkflowAction) []extstatus.AppliedAction {
				return []extstatus.AppliedAction{recordOf(k, wf, terminate, v1alpha1.PhaseSucceeded)}
			}, wantRecordCount: 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			phase := v1alpha1.ActionPhase("")
			if tc.beforeTerminal {
				phase = v1alpha1.PhaseSucceeded
			}
			var before []*v1alpha1.WorkflowAction
			for i := range maxAppliedActions {
				before = append(before, action(fmt.Sprintf("a%03d", i), v1alpha1.ActionSuspend, t0, phase))
			}
			list := append([]*v1alpha1.WorkflowAction{terminate}, before...)
			if !tc.beforeTerminal {
				list = []*v1alpha1.WorkflowAction{terminate}
			}
			d, _ := sealedDrainer(t, list...)
			w := wf.DeepCopy()
			ext := &extstatus.Extensions{AppliedActions: tc.records(d.Key, before)}
			if _, err := d.Drain(context.Background(), "ns/w", w, ext, t0); err != nil {
				t.Fatal(err)
			}
			if applied := ext.Shutdown == wfv1.ShutdownStrategyTerminate; applied != tc.wantApplied {
				t.Errorf("terminate applied = %v, want %v", applied, tc.wantApplied)
			}
			if len(ext.AppliedActions) != tc.wantRecordCount {
				t.Errorf("%d records kept, want %d", len(ext.AppliedActions), tc.wantRecordCount)
			}
			for _, r := range ext.AppliedActions {
				if !d.Key.Verify(r.Seal, provenance.PurposeAppliedAction, recordFields(wf.UID, r)...) {
					t.Errorf("record %s kept without the controller's seal", r.Name)
				}
			}
			if got := testutil.ToFloat64(d.Metrics.recordsIgnored); got != tc.wantIgnored {
				t.Errorf("wfguard_action_records_ignored_total = %v, want %v", got, tc.wantIgnored)
			}
			events := d.Recorder.(*eventLog)
			warnings := 0
			for _, e := range events.events {
				if e.reason == ReasonRecordIgnored && e.typ == corev1.EventTypeWarning {
					warnings++
				}
			}
			if float64(warnings) != tc.wantIgnored {
				t.Errorf("%d %s Events, want %v", warnings, ReasonRecordIgnored, tc.wantIgnored)
			}
			// A second pass over the same stored entries reports nothing again.
			ext = &extstatus.Extensions{AppliedActions: tc.records(d.Key, before)}
			_, _ = d.Drain(context.Background(), "ns/w", wf.DeepCopy(), ext, t0)
			if got := testutil.ToFloat64(d.Metrics.recordsIgnored); got != tc.wantIgnored {
				t.Errorf("after a second pass wfguard_action_records_ignored_total = %v, want %v (once per entry)", got, tc.wantIgnored)
			}
		})
	}
}

func TestACompletedWorkflowsForgedRecordDoesNotReportItsActionApplied(t *testing.T) {
	terminate := action("terminate", v1alpha1.ActionTerminate, t0, "")
	d, api := sealedDrainer(t, terminate)
	wf := running()
	wf.Status.Phase = wfv1.WorkflowSucceeded
	forged := []extstatus.AppliedAction{{UID: terminate.UID, Name: terminate.Name, Outcome: "Succeeded", Reason: ReasonApplied, Message: "forged"}}
	if _, err := d.SettleCompleted(context.Background(), "ns/w", wf, forged); err != nil {
		t.Fatal(err)
	}
	want := []string{"terminate Failed WorkflowCompleted: workflow w is already Succeeded"}
	if got := api.statusWrites(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("status writes = %q, want %q", got, want)
	}
}

func TestADeletedWorkflowsForgedRecordIsNotKeptForReport(t *testing.T) {
	terminate := action("terminate", v1alpha1.ActionTerminate, t0, "")
	d, api := sealedDrainer(t, terminate)
	u, err := extstatus.ToUnstructured(running(), extstatus.Extensions{AppliedActions: []extstatus.AppliedAction{
		{UID: terminate.UID, Name: terminate.Name, Outcome: "Succeeded", Reason: ReasonApplied}}})
	if err != nil {
		t.Fatal(err)
	}
	d.KeepGone(u)
	if err := d.ReportGone(context.Background(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	if got := api.statusWrites(); len(got) != 0 {
		t.Fatalf("status writes = %q, want none: the forged record must not report the action applied", got)
	}
}
