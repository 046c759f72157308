package controller

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/wfguard/wfguard/extstatus"
)

// A pass is written with one update; one that conflicts is re-applied onto the latest copy unless that
// would undo what is stored, and one the API server refuses for good ends the workflow Error as stored.
func TestAPassIsWrittenOnceReappliedOnAConflictAndNeverUndoesWhatIsStored(t *testing.T) {
	for _, tc := range []persistCase{
		{sentence: "a new workflow's first pass starts its pod and is written once",
			wantDynamic: []string{"update workflows wf"}, wantStored: "Running ", wantOurs: true,
			wantPersist: map[string]float64{persistUpdated: 1}, wantEvents: []string{"Normal WorkflowRunning"}},
		{sentence: "a pass whose write conflicts is re-applied onto the latest copy, keeping the other writer's change",
			meanwhile:   func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"edited-by": "user"}) },
			wantDynamic: []string{"update workflows wf", "get workflows wf", "update workflows wf"}, wantStored: "Running user", wantOurs: true,
			wantPersist: map[string]float64{persistConflict: 1, persistReapplied: 1}, wantEvents: []string{"Normal WorkflowRunning"}},
		// Its pod was created before the write: the next pass, from the completed copy, settles it.
		{sentence: "a pass that would undo a completed workflow is dropped and counted",
			meanwhile: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, string(wfv1.WorkflowSucceeded), "status", "phase")
			},
			wantDynamic: []string{"update workflows wf", "get workflows wf"}, wantStored: "Succeeded ",
			wantPersist: map[string]float64{persistConflict: 1, persistRefused: 1}},
		{sentence: "a pass over a workflow recreated meanwhile (another UID) is dropped",
			meanwhile:   func(u *unstructured.Unstructured) { u.SetUID("recreated-uid") },
			wantDynamic: []string{"update workflows wf", "get workflows wf"}, wantStored: " ",
			wantPersist: map[string]float64{persistConflict: 1}},
		{sentence: "a status the API server refuses for good ends the workflow Error as stored, with Warnings",
			failFirst:   apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Workflow"}, "wf", nil),
			wantDynamic: []string{"update workflows wf", "update workflows wf"}, wantStored: "Error ", wantOurs: true,
			wantPersist: map[string]float64{persistUnstorable: 1},
			wantEvents:  []string{"Warning WorkflowStatusInvalid", "Warning WorkflowFailed"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) { tc.run(t) })
	}
}

type persistCase struct {
	sentence    string
	meanwhile   func(u *unstructured.Unstructured) // someone else's write, before the pass
	failFirst   error                              // the API server's answer to the pass's first write
	wantDynamic []string                           // calls, the test's own left out
	wantStored  string                             // "phase labels[edited-by]"
	wantOurs    bool                               // what is stored is the pass's write, recorded as ours
	wantPersist map[string]float64
	wantEvents  []string // prefixes
}

// run reconciles a new workflow whose cache copy is at rv 10, after meanwhile wrote the API's copy.
func (tc persistCase) run(t *testing.T) {
	wf := running()
	wf.Status = wfv1.WorkflowStatus{}
	u := workflow(t, wf, extstatus.Extensions{}, "10")
	f := newFixture(t, Options{}, u)
	f.cache(u)
	if tc.meanwhile != nil {
		f.writeMeanwhile(tc.meanwhile)
	}
	if tc.failFirst != nil {
		f.failFirstUpdate(tc.failFirst)
	}
	if _, err := f.c.reconcile(t.Context(), "ns/wf"); err != nil {
		t.Fatal(err)
	}
	wantKube := []string{"create pods wf"} // every pass here starts the workflow's pod before its write
	if kube, dynamic := calls(f.kube), calls(f.dynamic); !sameCalls(kube, wantKube) || !sameCalls(dynamic, tc.wantDynamic) {
		t.Errorf("calls %q and %q, want %q and %q", kube, dynamic, wantKube, tc.wantDynamic)
	}
	stored := f.storedWorkflow()
	phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
	if got := phase + " " + stored.GetLabels()["edited-by"]; got != tc.wantStored {
		t.Errorf("stored %q, want %q", got, tc.wantStored)
	}
	if ours := f.c.LastWritten(stored.GetUID()) == stored.GetResourceVersion(); ours != tc.wantOurs {
		t.Errorf("the stored copy is recorded as our last write: %v, want %v (the stale-cache guard compares with it)", ours, tc.wantOurs)
	}
	for outcome, want := range tc.wantPersist {
		if got := testutil.ToFloat64(f.c.metrics.persists.WithLabelValues(outcome)); got != want {
			t.Errorf("persists %s counted %v, want %v", outcome, got, want)
		}
	}
	if got := f.events(); !eventsStartWith(got, tc.wantEvents) {
		t.Errorf("events %q, want %q", got, tc.wantEvents)
	}
}

// writeMeanwhile is someone else's write of the stored workflow, left out of the recorded calls.
func (f *fixture) writeMeanwhile(edit func(*unstructured.Unstructured)) {
	f.t.Helper()
	u := f.storedWorkflow()
	edit(u)
	client := f.dynamic.Resource(workflowsResource).Namespace("ns")
	if u.GetUID() != "wf-uid" { // recreated: deleted, then created again
		if err := client.Delete(f.t.Context(), "wf", metav1.DeleteOptions{}); err != nil {
			f.t.Fatal(err)
		}
		u.SetResourceVersion("")
		if _, err := client.Create(f.t.Context(), u, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	} else if _, err := client.Update(f.t.Context(), u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.dynamic.ClearActions()
}

// failFirstUpdate answers the first workflow update with err.
func (f *fixture) failFirstUpdate(err error) {
	failed := false
	f.dynamic.PrependReactor("update", "workflows", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failed {
			return false, nil, nil
		}
		failed = true
		return true, nil, err
	})
}
