package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
)

// actionServer is a fake API server for one WorkflowAction: a status write answers with the next scripted
// error, or stores the status once the script is used up. A terminal status is final, as the CRD's rule says.
type actionServer struct {
	mu      sync.Mutex
	stored  *v1alpha1.WorkflowAction
	script  []*apierrors.StatusError
	puts    int
	written []v1alpha1.WorkflowActionStatus
}

func (s *actionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := func(code int, obj any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(obj)
	}
	fail := func(err *apierrors.StatusError) {
		st := err.Status()
		st.APIVersion, st.Kind = "v1", "Status"
		reply(int(st.Code), st)
	}
	out := func() *v1alpha1.WorkflowAction {
		a := s.stored.DeepCopy()
		a.APIVersion, a.Kind = v1alpha1.SchemeGroupVersion.String(), "WorkflowAction"
		return a
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/workflowactions/"+s.stored.Name):
		reply(http.StatusOK, out())
	case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/workflowactions/"+s.stored.Name+"/status"):
		s.puts++
		if len(s.script) > 0 {
			err := s.script[0]
			s.script = s.script[1:]
			fail(err)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var a v1alpha1.WorkflowAction
		if err := json.Unmarshal(body, &a); err != nil {
			fail(apierrors.NewBadRequest(err.Error()))
			return
		}
		if s.stored.Status.Terminal() {
			fail(apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "WorkflowAction"}, a.Name,
				field.ErrorList{field.Invalid(field.NewPath("status"), "", "a terminal status is final")}))
			return
		}
		s.stored.Status = a.Status
		s.written = append(s.written, a.Status)
		reply(http.StatusOK, out())
	default:
		fail(apierrors.NewNotFound(actionsGR, r.URL.Path))
	}
}

// recordedEvent is one Event, with the object it is on.
type recordedEvent struct {
	kind, name, typ, reason, message string
}

// eventLog is an EventRecorder that keeps every Event in order.
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) Event(obj runtime.Object, typ, reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind := fmt.Sprintf("%T", obj)
	name := ""
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetName()
	}
	l.events = append(l.events, recordedEvent{kind, name, typ, reason, message})
}

func (l *eventLog) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	l.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (l *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	l.Eventf(obj, typ, reason, format, args...)
}

// statusError is the API error err as the fake server sends it.
func statusError(err error) *apierrors.StatusError {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		panic(fmt.Sprintf("%v is not an API status error", err))
	}
	return se
}

var (
	actionsGR    = schema.GroupResource{Group: "argoproj.io", Resource: "workflowactions"}
	errStatus500 = statusError(apierrors.NewInternalError(fmt.Errorf("etcdserver: leader changed")))
	errConflict  = statusError(apierrors.NewConflict(actionsGR, "act", fmt.Errorf("the object has been modified")))
	errInvalid   = statusError(apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "WorkflowAction"}, "act",
		field.ErrorList{field.TooLong(field.NewPath("status", "message"), "", 4096)}))
	errTooLarge = statusError(apierrors.NewRequestEntityTooLargeError("limit is 3145728"))
)

func TestReportWritesEachRecordedOutcomeOnceWithItsEventsAndCount(t *testing.T) {
	type pass struct {
		script  []*apierrors.StatusError // answers to this pass's status writes before one is stored
		wantErr bool
	}
	for _, tc := range []struct {
		sentence string
		action   string
		record   extstatus.AppliedAction
		passes   []pass
		// what ends up stored, and the Events and count it produced
		wantStatus v1alpha1.WorkflowActionStatus
		wantEvents []recordedEvent
		wantLabels []string // action, phase, reason of the one increment
		wantPuts   int
	}{
		{
			sentence:   "an applied Suspend is written Succeeded with a Normal Event on the action and on the workflow, counted once",
			action:     v1alpha1.ActionSuspend,
			record:     extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow suspended"},
			passes:     []pass{{}, {}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseSucceeded, Reason: ReasonApplied, Message: "workflow suspended"},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeNormal, "Applied", "workflow suspended"},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeNormal, EventReasonApplied, "Suspend act: Applied (workflow suspended)"},
			},
			wantLabels: []string{"Suspend", "Succeeded", "Applied"},
			wantPuts:   1,
		},
		{
			sentence:   "a failed Resume is written Failed with Warning Events reason NothingToResume, counted once",
			action:     v1alpha1.ActionResume,
			record:     extstatus.AppliedAction{Outcome: "Failed", Reason: ReasonNothingToResume, Message: "nothing to resume"},
			passes:     []pass{{}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseFailed, Reason: ReasonNothingToResume, Message: "nothing to resume"},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeWarning, ReasonNothingToResume, "nothing to resume"},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeWarning, EventReasonFailed, "Resume act: NothingToResume (nothing to resume)"},
			},
			wantLabels: []string{"Resume", "Failed", ReasonNothingToResume},
			wantPuts:   1,
		},
		{
			sentence:   "a write that fails with a 500 leaves the action pending and errs; the retried pass writes it exactly once",
			action:     v1alpha1.ActionTerminate,
			record:     extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow terminating"},
			passes:     []pass{{script: []*apierrors.StatusError{errStatus500}, wantErr: true}, {}, {}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseSucceeded, Reason: ReasonApplied, Message: "workflow terminating"},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeNormal, "Applied", "workflow terminating"},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeNormal, EventReasonApplied, "Terminate act: Applied (workflow terminating)"},
			},
			wantLabels: []string{"Terminate", "Succeeded", "Applied"},
			wantPuts:   2,
		},
		{
			sentence:   "a write that conflicts three times errs and leaves the action pending; the retried pass writes it exactly once",
			action:     v1alpha1.ActionStop,
			record:     extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow stopping"},
			passes:     []pass{{script: []*apierrors.StatusError{errConflict, errConflict, errConflict}, wantErr: true}, {}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseSucceeded, Reason: ReasonApplied, Message: "workflow stopping"},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeNormal, "Applied", "workflow stopping"},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeNormal, EventReasonApplied, "Stop act: Applied (workflow stopping)"},
			},
			wantLabels: []string{"Stop", "Succeeded", "Applied"},
			wantPuts:   4,
		},
		{
			sentence:   "one conflict is resolved in the same pass by re-reading the pending action",
			action:     v1alpha1.ActionStop,
			record:     extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow stopping"},
			passes:     []pass{{script: []*apierrors.StatusError{errConflict}}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseSucceeded, Reason: ReasonApplied, Message: "workflow stopping"},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeNormal, "Applied", "workflow stopping"},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeNormal, EventReasonApplied, "Stop act: Applied (workflow stopping)"},
			},
			wantLabels: []string{"Stop", "Succeeded", "Applied"},
			wantPuts:   2,
		},
		{
			sentence: "an outcome the API server refuses as invalid ends as OutcomeNotStorable, and the workflow's Event says so",
			action:   v1alpha1.ActionSuspend,
			record:   extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow suspended"},
			passes:   []pass{{script: []*apierrors.StatusError{errInvalid}}, {}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseFailed, Reason: ReasonOutcomeNotStorable,
				Message: "the outcome could not be stored: " + errInvalid.Error()},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeWarning, ReasonOutcomeNotStorable, "the outcome could not be stored: " + errInvalid.Error()},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeWarning, EventReasonFailed, "Suspend act: OutcomeNotStorable (the outcome could not be stored: " + errInvalid.Error() + ")"},
			},
			wantLabels: []string{"Suspend", "Failed", ReasonOutcomeNotStorable},
			wantPuts:   2,
		},
		{
			sentence: "an outcome the API server refuses as too large ends as OutcomeNotStorable",
			action:   v1alpha1.ActionResume,
			record:   extstatus.AppliedAction{Outcome: "Succeeded", Reason: ReasonApplied, Message: "resumed (1 suspend nodes)"},
			passes:   []pass{{script: []*apierrors.StatusError{errTooLarge}}},
			wantStatus: v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseFailed, Reason: ReasonOutcomeNotStorable,
				Message: "the outcome could not be stored: " + errTooLarge.Error()},
			wantEvents: []recordedEvent{
				{"*v1alpha1.WorkflowAction", "act", corev1.EventTypeWarning, ReasonOutcomeNotStorable, "the outcome could not be stored: " + errTooLarge.Error()},
				{"*v1alpha1.Workflow", "w", corev1.EventTypeWarning, EventReasonFailed, "Resume act: OutcomeNotStorable (the outcome could not be stored: " + errTooLarge.Error() + ")"},
			},
			wantLabels: []string{"Resume", "Failed", ReasonOutcomeNotStorable},
			wantPuts:   2,
		},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := action("act", tc.action, t0, "")
			d, srv, idx := drainerOverServer(t, a)
			m, events := d.Metrics, d.Recorder.(*eventLog)
			record := tc.record
			record.UID, record.Name = a.UID, a.Name

			for i, p := range tc.passes {
				srv.mu.Lock()
				srv.script = p.script
				srv.mu.Unlock()
				err := d.Report(context.Background(), "ns/w", running(), []extstatus.AppliedAction{record})
				if (err != nil) != p.wantErr {
					t.Fatalf("pass %d: Report = %v, want an error: %v", i, err, p.wantErr)
				}
				srv.mu.Lock()
				stored := srv.stored.DeepCopy()
				srv.mu.Unlock()
				if p.wantErr {
					if stored.Status.Terminal() || testutil.CollectAndCount(m.outcomes) != 0 || len(events.events) != 0 {
						t.Fatalf("pass %d failed, yet the action is %+v, %d outcomes counted, Events %v: want it pending, nothing counted, no Event",
							i, stored.Status, testutil.CollectAndCount(m.outcomes), events.events)
					}
				}
				// The informer delivers what the server stored before the next pass (a replay must be a no-op).
				if err := idx.Update(stored); err != nil {
					t.Fatal(err)
				}
			}

			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.written) != 1 {
				t.Fatalf("%d statuses stored, want exactly 1: %+v", len(srv.written), srv.written)
			}
			got := srv.written[0]
			if got.CompletionTime == nil || !got.CompletionTime.Time.Equal(t0) {
				t.Errorf("completionTime = %v, want %v (the clock's)", got.CompletionTime, t0)
			}
			got.CompletionTime = nil
			if fmt.Sprint(got) != fmt.Sprint(tc.wantStatus) {
				t.Errorf("stored status = %+v, want %+v", got, tc.wantStatus)
			}
			if srv.puts != tc.wantPuts {
				t.Errorf("%d status writes, want %d", srv.puts, tc.wantPuts)
			}
			if fmt.Sprint(events.events) != fmt.Sprint(tc.wantEvents) {
				t.Errorf("Events =\n %v\nwant\n %v", events.events, tc.wantEvents)
			}
			if n := testutil.CollectAndCount(m.outcomes); n != 1 {
				t.Errorf("%d series of wfguard_workflow_actions_total, want 1", n)
			}
			if v := testutil.ToFloat64(m.outcomes.WithLabelValues(tc.wantLabels...)); v != 1 {
				t.Errorf("wfguard_workflow_actions_total%v = %v, want 1", tc.wantLabels, v)
			}
		})
	}
}

func TestAnOutcomeWrittenFromADeletedWorkflowsRecordIsNotAppliedAgainWhileTheCacheLags(t *testing.T) {
	a := action("act", v1alpha1.ActionSuspend, t0, "")
	d, srv, _ := drainerOverServer(t, a)
	deleted := running()
	deleted.UID = "deleted-uid"
	record := extstatus.AppliedAction{UID: a.UID, Name: a.Name, Outcome: "Succeeded", Reason: ReasonApplied, Message: "workflow suspended"}
	if err := d.Report(context.Background(), "ns/w", deleted, []extstatus.AppliedAction{record}); err != nil {
		t.Fatal(err)
	}

	// A new workflow of the same name, whose record list is empty, drains over a cache that still shows the action pending.
	ext := &extstatus.Extensions{}
	if _, err := d.Drain(context.Background(), "ns/w", running(), ext, t0); err != nil {
		t.Fatal(err)
	}
	if len(ext.AppliedActions) != 0 {
		t.Fatalf("the reported action was applied again to the new workflow: %+v", ext.AppliedActions)
	}
	// Once the cache shows it terminal, the drainer forgets its write; its status keeps it from the drain.
	srv.mu.Lock()
	stored := srv.stored.DeepCopy()
	srv.mu.Unlock()
	if !stored.Status.Terminal() {
		t.Fatalf("the outcome was not written: %+v", stored.Status)
	}
	d.Observed(stored)
	if _, ok := d.written.Load(a.UID); ok {
		t.Error("the drainer still remembers a write its cache shows")
	}
	d.written.Store(a.UID, struct{}{})
	d.Forget(cache.DeletedFinalStateUnknown{Key: "ns/act", Obj: stored})
	if _, ok := d.written.Load(a.UID); ok {
		t.Error("the drainer still remembers a write of a deleted action")
	}
}

// drainerOverServer is a Drainer whose cache holds a and whose client writes to an actionServer storing a;
// its Metrics are fresh and its Recorder an eventLog.
func drainerOverServer(t *testing.T, a *v1alpha1.WorkflowAction) (*Drainer, *actionServer, cache.Indexer) {
	t.Helper()
	srv := &actionServer{stored: a.DeepCopy()}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client, err := v1alpha1.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{IndexWorkflowKey: IndexByWorkflow})
	if err := idx.Add(a); err != nil {
		t.Fatal(err)
	}
	d := &Drainer{Client: client, Actions: idx, FieldManager: "wfguard", Clock: clocktesting.NewFakePassiveClock(t0),
		Log: slog.New(slog.DiscardHandler), Metrics: m, Recorder: &eventLog{}}
	return d, srv, idx
}

func TestActionsOfACompletedWorkflowWhoseNodesCannotBeReadGetTheirOutcome(t *testing.T) {
	why := errors.New("reading status.compressedNodes of workflow ns/w: refused: too much")
	unreadable := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "w-uid"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded}}
	for _, tc := range []struct {
		sentence string
		action   string
		recorded bool
		phase    v1alpha1.ActionPhase
		reason   string
		message  string // substring
	}{
		{"a Suspend fails as for any completed workflow", v1alpha1.ActionSuspend, false, v1alpha1.PhaseFailed, ReasonWorkflowCompleted, "already Succeeded"},
		{"a Retry, which needs the nodes, fails saying why they cannot be read", v1alpha1.ActionRetry, false, v1alpha1.PhaseFailed, ReasonInvalidNodeTree,
			"its nodes cannot be read: reading status.compressedNodes"},
		{"a recorded action gets its recorded outcome", v1alpha1.ActionStop, true, v1alpha1.PhaseSucceeded, ReasonApplied, "stopped"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := action("act", tc.action, t0, "")
			d, srv, _ := drainerOverServer(t, a)
			var records []extstatus.AppliedAction
			if tc.recorded {
				records = []extstatus.AppliedAction{{UID: a.UID, Name: a.Name, Outcome: string(v1alpha1.PhaseSucceeded), Reason: ReasonApplied, Message: "stopped"}}
			}
			if err := d.SettleUnreadable(context.Background(), "ns/w", unreadable, records, why); err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			got := srv.stored.Status
			srv.mu.Unlock()
			if got.Phase != tc.phase || got.Reason != tc.reason || !strings.Contains(got.Message, tc.message) {
				t.Errorf("outcome %s/%s %q, want %s/%s saying %q", got.Phase, got.Reason, got.Message, tc.phase, tc.reason, tc.message)
			}
		})
	}
}
