package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/internal/zipbomb"
)

// A workflow argo's types cannot read never reaches the engine: a running one is failed as argo fails it,
// a completed one has what waits on it settled, and refused nodes are reported once.
func TestAWorkflowArgosTypesCannotReadIsFailedOrSettledAndReportedOnce(t *testing.T) {
	bomb := unreadable(false) // its spec reads; its nodes are refused
	bomb.Object["spec"] = map[string]any{"entrypoint": "main"}
	_ = unstructured.SetNestedField(bomb.Object, zipbomb.CompressedNodes(8<<20, 0), "status", "compressedNodes")
	held := podOf(running(), podNode("held", "Running", t0), corev1.PodSucceeded)
	held.Finalizers = []string{common.FinalizerPodStatus}
	suspend, suspendStored := pendingAction(t, "suspend", actionsv1.ActionSuspend, t0.Add(-2*time.Minute))
	retry, retryStored := pendingAction(t, "retry", actionsv1.ActionRetry, t0.Add(-time.Minute))
	for _, tc := range []undecodableCase{
		{sentence: "a running workflow is failed with argo's message, its object otherwise kept, and a Warning",
			stored: unreadable(false), wantDynamic: []string{"update workflows wf"},
			wantStored: "Failed: cannot unmarshall spec:", wantEvents: []string{"Warning WorkflowInvalidSpec cannot unmarshall spec:"}},
		{sentence: "a failure that cannot be stored is an error saying what was being done, and reports nothing",
			stored: unreadable(false), failUpdates: true,
			wantDynamic: []string{"update workflows wf"}, wantErr: "failing undecodable workflow ns/wf", wantStored: "Running: "},
		{sentence: "refused nodes are reported once, and the version that fails the workflow is not reported again",
			stored: bomb, passes: 2, wantDynamic: []string{"update workflows wf"}, wantStored: "Failed: cannot unmarshall spec:",
			wantEvents: []string{"Warning WorkflowNodesRefused status.compressedNodes", "Warning WorkflowInvalidSpec cannot unmarshall spec:"}, wantRefused: 1},
		{sentence: "a completed workflow's pods are released and labelled completed, its pending actions fail and a Retry is refused",
			stored: unreadable(true), api: []runtime.Object{held, suspendStored, retryStored}, cached: []runtime.Object{held, suspend, retry},
			wantKube: []string{"patch pods " + held.Name}, wantDynamic: []string{"update workflowactions/status suspend", "update workflowactions/status retry"},
			wantStored: "Succeeded: ",
			wantEvents: []string{"Warning WorkflowCompleted workflow wf is already Succeeded", "Warning InvalidNodeTree cannot retry wf: its nodes cannot be read"},
			wantOutcomes: map[string]string{"suspend": "Failed WorkflowCompleted: workflow wf is already Succeeded",
				"retry": "Failed InvalidNodeTree: cannot retry wf: its nodes cannot be read"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) { tc.run(t) })
	}
}

type undecodableCase struct {
	sentence string
	stored   *unstructured.Unstructured // the workflow, in the API and the cache
	api      []runtime.Object           // more objects in the API
	cached   []runtime.Object           // more objects in the caches
	// failUpdates fails every workflow update; passes reconciles this many times, the cache following each write.
	failUpdates           bool
	passes                int
	wantErr               string
	wantKube, wantDynamic []string // calls, in order
	wantStored            string   // "phase: message prefix"
	wantEvents            []string // prefixes, in order
	wantRefused           float64
	wantOutcomes          map[string]string // action name → "Phase Reason: message prefix"
}

func (tc undecodableCase) run(t *testing.T) {
	f := newFixture(t, Options{}, append([]runtime.Object{tc.stored}, tc.api...)...)
	f.cache(append([]runtime.Object{tc.stored}, tc.cached...)...)
	if tc.failUpdates {
		f.dynamic.PrependReactor("update", "workflows", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is unhappy")
		})
	}
	var err error
	for pass := range max(tc.passes, 1) {
		if pass > 0 {
			f.cache(f.storedWorkflow()) // the informer delivers the write
		}
		if _, err = f.c.reconcile(t.Context(), "ns/wf"); err != nil {
			break
		}
	}
	if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
		t.Errorf("reconcile = %v, want an error containing %q", err, tc.wantErr)
	}
	if kube, dynamic := calls(f.kube), withoutGets(calls(f.dynamic)); !sameCalls(kube, tc.wantKube) || !sameCalls(dynamic, tc.wantDynamic) {
		t.Errorf("calls %q and %q, want %q and %q", kube, dynamic, tc.wantKube, tc.wantDynamic)
	}
	tc.checkStored(t, f)
	if got := f.events(); !eventsStartWith(got, tc.wantEvents) {
		t.Errorf("events %q, want %q", got, tc.wantEvents)
	}
	if got := sum(f.c.metrics.nodesRefused); got != tc.wantRefused {
		t.Errorf("refusals counted %v, want %v", got, tc.wantRefused)
	}
	for name, want := range tc.wantOutcomes {
		if got := f.actionOutcome(name); !strings.HasPrefix(got, want) {
			t.Errorf("action %s ended %q, want %q", name, got, want)
		}
	}
}

// checkStored checks the stored workflow's phase and message, and that a failed one is labelled as argo
// labels it and keeps what it could not read.
func (tc undecodableCase) checkStored(t *testing.T, f *fixture) {
	t.Helper()
	u := f.storedWorkflow()
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	message, _, _ := unstructured.NestedString(u.Object, "status", "message")
	if got := phase + ": " + message; !strings.HasPrefix(got, tc.wantStored) {
		t.Errorf("stored %q, want %q", got, tc.wantStored)
	}
	if phase != "Failed" {
		return
	}
	if l := u.GetLabels(); l[common.LabelKeyCompleted] != "true" || l[common.LabelKeyPhase] != "Failed" {
		t.Errorf("labels %v, want completed and phase Failed", l)
	}
	if !equalNested(u, tc.stored, "spec") || f.c.LastWritten(u.GetUID()) != u.GetResourceVersion() {
		t.Errorf("the spec changed or the write is not recorded as ours (last written %q, stored %q)", f.c.LastWritten(u.GetUID()), u.GetResourceVersion())
	}
}

// unreadable is workflow ns/wf whose spec argo's types cannot read, running or completed Succeeded.
func unreadable(completed bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": map[string]any{"namespace": "ns", "name": "wf", "uid": "wf-uid", "resourceVersion": "10"},
		"spec":     map[string]any{"entrypoint": "main", "templates": "not a list"},
		"status":   map[string]any{"phase": "Running"}}}
	if completed {
		u.Object["status"] = map[string]any{"phase": "Succeeded"}
		u.SetLabels(map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: "Succeeded"})
	}
	return u
}

func withoutGets(calls []string) []string {
	var out []string
	for _, c := range calls {
		if !strings.HasPrefix(c, "get ") {
			out = append(out, c)
		}
	}
	return out
}

func equalNested(a, b *unstructured.Unstructured, field string) bool {
	x, _, _ := unstructured.NestedFieldNoCopy(a.Object, field)
	y, _, _ := unstructured.NestedFieldNoCopy(b.Object, field)
	return fmt.Sprint(x) == fmt.Sprint(y)
}
