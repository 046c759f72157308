package actions

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
)

func TestTheRecordsOfADeletedWorkflowAreReportedOnItsKeysNextPass(t *testing.T) {
	record := extstatus.AppliedAction{UID: "act-uid", Name: "act", Outcome: string(v1alpha1.PhaseSucceeded), Reason: ReasonApplied, Message: "workflow suspended"}
	deleted := func(t *testing.T, records ...extstatus.AppliedAction) *unstructured.Unstructured {
		t.Helper()
		u, err := extstatus.ToUnstructured(running(), extstatus.Extensions{AppliedActions: records})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		name        string
		deleted     func(t *testing.T) any
		passKey     string
		script      []*apierrors.StatusError
		wantErr     bool   // from the first pass; the second pass then reports
		wantMessage string // of the one outcome written; "" when none is
	}{
		{name: "the delete event's record is reported with its outcome and message",
			deleted: func(t *testing.T) any { return deleted(t, record) }, passKey: "ns/w", wantMessage: record.Message},
		{name: "a tombstone's record is reported too",
			deleted: func(t *testing.T) any {
				return cache.DeletedFinalStateUnknown{Key: "ns/w", Obj: deleted(t, record)}
			}, passKey: "ns/w", wantMessage: record.Message},
		{name: "a record only the annotation mirror holds, after argo's types dropped the status field, is reported",
			deleted: func(t *testing.T) any {
				u := deleted(t, record)
				unstructured.RemoveNestedField(u.Object, "status", "appliedActions")
				return u
			}, passKey: "ns/w", wantMessage: extstatus.LostMessage},
		{name: "a workflow without records keeps nothing to report",
			deleted: func(t *testing.T) any { return deleted(t) }, passKey: "ns/w"},
		{name: "another key's pass reports nothing of it",
			deleted: func(t *testing.T) any { return deleted(t, record) }, passKey: "ns/other"},
		{name: "a report the API server refuses is kept, and the next pass writes it",
			deleted: func(t *testing.T) any { return deleted(t, record) }, passKey: "ns/w",
			script: []*apierrors.StatusError{errStatus500}, wantErr: true, wantMessage: record.Message},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, srv, _ := drainerOverServer(t, action("act", v1alpha1.ActionSuspend, t0, ""))
			srv.script = tc.script
			d.KeepGone(tc.deleted(t))

			err := d.ReportGone(context.Background(), tc.passKey)
			if (err != nil) != tc.wantErr {
				t.Fatalf("first pass: err = %v, want an error: %v", err, tc.wantErr)
			}
			if err := d.ReportGone(context.Background(), tc.passKey); err != nil {
				t.Fatalf("second pass: %v", err)
			}
			if err := d.ReportGone(context.Background(), tc.passKey); err != nil {
				t.Fatalf("third pass: %v", err)
			}

			srv.mu.Lock()
			defer srv.mu.Unlock()
			if tc.wantMessage == "" {
				if len(srv.written) != 0 {
					t.Fatalf("outcomes written: %+v, want none", srv.written)
				}
				return
			}
			if len(srv.written) != 1 {
				t.Fatalf("outcomes written: %+v, want exactly one", srv.written)
			}
			got := srv.written[0]
			if got.Phase != v1alpha1.PhaseSucceeded || got.Reason != ReasonApplied || got.Message != tc.wantMessage {
				t.Errorf("outcome = %s %s %q, want Succeeded %s %q", got.Phase, got.Reason, got.Message, ReasonApplied, tc.wantMessage)
			}
			var reasons []string
			for _, e := range d.Recorder.(*eventLog).events {
				reasons = append(reasons, e.name+"/"+e.reason)
			}
			if want := []string{"act/" + ReasonApplied, "w/" + EventReasonApplied}; !slices.Equal(reasons, want) {
				t.Errorf("events = %q, want %q: one on the action, one on the deleted workflow", reasons, want)
			}
		})
	}
}
