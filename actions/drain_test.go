package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func action(name, typ string, created time.Time, phase v1alpha1.ActionPhase) *v1alpha1.WorkflowAction {
	return &v1alpha1.WorkflowAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: "w"}, Action: typ},
		Status:     v1alpha1.WorkflowActionStatus{Phase: phase},
	}
}

// drainerOver is a Drainer whose cache holds list. Actions that target the workflow need no client: their
// outcomes are only recorded by Drain, and written by Report after the persist.
func drainerOver(t *testing.T, list ...*v1alpha1.WorkflowAction) *Drainer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{IndexWorkflowKey: IndexByWorkflow})
	for _, a := range list {
		if err := idx.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	return &Drainer{Actions: idx, Log: slog.New(slog.DiscardHandler)}
}

func running() *wfv1.Workflow {
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "w-uid"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}}
}

func TestDrainAppliesPendingActionsInOrderAndRecordsThemWriteAhead(t *testing.T) {
	byAlice := action("b-suspend", v1alpha1.ActionSuspend, t0, "")
	byAlice.Labels = map[string]string{common.LabelKeyCreator: "alice"}
	other := action("for-another-workflow", v1alpha1.ActionTerminate, t0, "")
	other.Spec.WorkflowRef.Name = "other"
	d := drainerOver(t,
		action("0-suspend-later", v1alpha1.ActionSuspend, t0.Add(time.Second), ""), // later, though first by name
		byAlice,
		action("a-resume", v1alpha1.ActionResume, t0, ""), // same time as b-suspend: first by name
		action("done", v1alpha1.ActionTerminate, t0, v1alpha1.PhaseSucceeded),
		action("replayed", v1alpha1.ActionTerminate, t0, ""),
		other,
	)
	wf := running()
	ext := &extstatus.Extensions{AppliedActions: []extstatus.AppliedAction{
		{UID: "replayed-uid", Name: "replayed", Outcome: string(v1alpha1.PhaseSucceeded), Reason: ReasonApplied, Message: "workflow terminating"},
		{UID: "gone-uid", Name: "gone", Outcome: string(v1alpha1.PhaseSucceeded), Reason: ReasonApplied},
	}}

	recordFull, err := d.Drain(context.Background(), "ns/w", wf, ext, t0)
	if err != nil || recordFull {
		t.Fatalf("Drain = (%v, %v), want (false, nil)", recordFull, err)
	}
	var got []string
	for _, r := range ext.AppliedActions {
		got = append(got, fmt.Sprintf("%s %s %s", r.Name, r.Outcome, r.Reason))
	}
	want := []string{
		"replayed Succeeded Applied", // recorded before a crash: kept for Report, not applied again
		"a-resume Failed NothingToResume",
		"b-suspend Succeeded Applied",
		"0-suspend-later Succeeded Applied", // already suspended: succeeds, changing nothing
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("appliedActions = %q, want %q (in order; the gone action's record pruned, the terminal one unrecorded)", got, want)
	}
	if ext.Shutdown != "" {
		t.Errorf("shutdown = %q: a recorded action or another workflow's was applied", ext.Shutdown)
	}
	if ext.Suspended == nil || !*ext.Suspended {
		t.Errorf("the workflow is not suspended")
	}
	if wf.Labels[common.LabelKeyAction] != v1alpha1.ActionSuspend || wf.Labels[common.LabelKeyActor] != "alice" {
		t.Errorf("actor labels = %v, want the Suspend by alice (the later no-op Suspend changes no label)", wf.Labels)
	}
}

func TestTheActorLabelsNameTheRequesterOfTheLastActionThatChangedSomething(t *testing.T) {
	previous := map[string]string{common.LabelKeyAction: "Suspend", common.LabelKeyActor: "alice",
		common.LabelKeyActorEmail: "alice.at.example.com", common.LabelKeyActorPreferredUsername: "alice", "team": "blue"}
	cases := []struct {
		name    string
		action  string
		labels  map[string]string
		suspend bool // the workflow is suspended before the action
		want    map[string]string
	}{
		{"a Terminate by bob replaces alice's labels with his", v1alpha1.ActionTerminate,
			map[string]string{common.LabelKeyCreator: "bob", common.LabelKeyCreatorEmail: "bob.at.example.com"}, false,
			map[string]string{common.LabelKeyAction: "Terminate", common.LabelKeyActor: "bob", common.LabelKeyActorEmail: "bob.at.example.com", "team": "blue"}},
		{"an action without requester labels clears the previous requester", v1alpha1.ActionTerminate, nil, false,
			map[string]string{common.LabelKeyAction: "Terminate", "team": "blue"}},
		{"a Suspend of a suspended workflow changes no label", v1alpha1.ActionSuspend,
			map[string]string{common.LabelKeyCreator: "bob"}, true, previous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := action("act", tc.action, t0, "")
			a.Labels = tc.labels
			wf := running()
			wf.Labels = maps.Clone(previous)
			ext := &extstatus.Extensions{Suspended: &tc.suspend}
			if _, err := drainerOver(t, a).Drain(context.Background(), "ns/w", wf, ext, t0); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(wf.Labels, tc.want) {
				t.Errorf("labels = %v, want %v", wf.Labels, tc.want)
			}
		})
	}
}

func TestDrainAppliesNothingMoreWhileTheRecordIsFull(t *testing.T) {
	var list []*v1alpha1.WorkflowAction
	ext := &extstatus.Extensions{}
	for i := range maxAppliedActions {
		a := action(fmt.Sprintf("a%03d", i), v1alpha1.ActionSuspend, t0, "")
		list = append(list, a)
		ext.AppliedActions = append(ext.AppliedActions, extstatus.AppliedAction{UID: a.UID, Name: a.Name, Outcome: string(v1alpha1.PhaseSucceeded), Reason: ReasonApplied})
	}
	list = append(list, action("waiting", v1alpha1.ActionTerminate, t0.Add(time.Second), ""))
	wf := running()

	alreadyPending := action("already-pending", v1alpha1.ActionSuspend, t0.Add(2*time.Second), v1alpha1.PhasePending)
	list = append(list, alreadyPending)
	d := drainerOver(t, list...)
	api := fakeActionAPI(t)
	d.Client = api.client

	recordFull, err := d.Drain(context.Background(), "ns/w", wf, ext, t0)
	if err != nil || !recordFull {
		t.Fatalf("Drain = (%v, %v), want (true, nil)", recordFull, err)
	}
	if len(ext.AppliedActions) != maxAppliedActions || ext.Shutdown != "" {
		t.Errorf("%d records, shutdown %q: want the %d records kept and the waiting Terminate not applied", len(ext.AppliedActions), ext.Shutdown, maxAppliedActions)
	}
	want := []string{"waiting Pending WaitingForRecord: seen; waiting until the outcomes of the 100 actions applied to workflow w before it are written"}
	if got := api.statusWrites(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("status writes = %q, want %q (once, and none for the action already marked Pending)", got, want)
	}
}

// actionAPI answers the status writes of WorkflowActions like the API server, recording each.
type actionAPI struct {
	client *v1alpha1.Client
	mu     sync.Mutex
	writes []string
}

func fakeActionAPI(t *testing.T) *actionAPI {
	t.Helper()
	api := &actionAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a v1alpha1.WorkflowAction
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/status") || json.NewDecoder(r.Body).Decode(&a) != nil {
			http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		api.mu.Lock()
		api.writes = append(api.writes, fmt.Sprintf("%s %s %s: %s", a.Name, a.Status.Phase, a.Status.Reason, a.Status.Message))
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&a)
	}))
	t.Cleanup(srv.Close)
	client, err := v1alpha1.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	api.client = client
	return api
}

func (api *actionAPI) statusWrites() []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	return slices.Clone(api.writes)
}

func TestPruneKeepsOnlyRecordsOfActionsStillPending(t *testing.T) {
	records := []extstatus.AppliedAction{{UID: "pending-uid"}, {UID: "done-uid"}, {UID: "gone-uid"}}
	d := drainerOver(t)
	got := d.pruneApplied(records, []*v1alpha1.WorkflowAction{
		action("pending", v1alpha1.ActionSuspend, t0, v1alpha1.PhasePending),
		action("done", v1alpha1.ActionSuspend, t0, v1alpha1.PhaseFailed),
	})
	if len(got) != 1 || got[0].UID != "pending-uid" {
		t.Errorf("pruned to %v, want only the pending action's record", got)
	}
	if got := d.pruneApplied(records[1:], nil); got != nil {
		t.Errorf("pruned to %v, want nil (an idle workflow has no appliedActions at all)", got)
	}
}

func TestTheActionLabelIsBounded(t *testing.T) {
	for action, want := range map[string]string{
		v1alpha1.ActionSuspend: "Suspend", v1alpha1.ActionResume: "Resume", v1alpha1.ActionStop: "Stop",
		v1alpha1.ActionTerminate: "Terminate", v1alpha1.ActionRetry: "Retry", "Rerun": actionUnknown, "": actionUnknown,
	} {
		if got := actionLabel(action); got != want {
			t.Errorf("actionLabel(%q) = %q, want %q", action, got, want)
		}
	}
}
