package controller

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/wfguard/wfguard/extstatus"
)

// A running workflow's pass is its declared phases, each timed once; a phase's failure names it in the
// error and the log, and a failure of execute still writes what the pass decided, without its effects.
func TestAPassRunsItsDeclaredPhasesAndAFailureNamesItsPhase(t *testing.T) {
	refusePods := func(f *fixture) {
		f.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		})
	}
	running := []string{PhaseRetryCleanup, PhaseDrainActions, PhaseFindMissingPods, PhaseMergeTaskResults, PhaseAssessPods,
		PhaseExecute, PhasePersist, PhaseAfterPersist, PhaseEffects}
	for _, tc := range []struct {
		sentence    string
		arrange     func(*fixture)
		wantPhases  []string // timed once each; the others never
		wantFailed  string   // the phase the pass's error names
		wantDynamic []string
	}{
		{sentence: "a new workflow's pass runs every phase of the running flow once",
			wantPhases: running, wantDynamic: []string{"update workflows wf"}},
		{sentence: "a pod the API server cannot create yet fails execute; the pass is still written, its effects are not applied",
			arrange: refusePods, wantPhases: running[:len(running)-1], wantFailed: PhaseExecute, wantDynamic: []string{"update workflows wf"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := running0()
			var logs bytes.Buffer
			f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, workflow(t, wf, extstatus.Extensions{}, "10"))
			f.cache(workflow(t, wf, extstatus.Extensions{}, "10"))
			if tc.arrange != nil {
				tc.arrange(f)
			}
			requeue, err := f.c.reconcile(t.Context(), "ns/wf")
			if got := failedPhase(err); got != tc.wantFailed || (err != nil && !strings.HasPrefix(err.Error(), tc.wantFailed+": ")) {
				t.Fatalf("reconcile = %v (phase %q), want the phase %q named", err, got, tc.wantFailed)
			}
			for _, name := range phaseNames {
				want := uint64(0)
				if slices.Contains(tc.wantPhases, name) {
					want = 1
				}
				if got := phaseCount(t, f.registry, name); got != want {
					t.Errorf("phase %s timed %d times, want %d", name, got, want)
				}
			}
			if got := calls(f.dynamic); !sameCalls(got, tc.wantDynamic) {
				t.Errorf("workflow calls %q, want %q", got, tc.wantDynamic)
			}
			if err != nil {
				f.c.settle("ns/wf", requeue, err)
				if !strings.Contains(logs.String(), "passPhase="+tc.wantFailed) {
					t.Errorf("the failure's log does not name the phase:\n%s", logs.String())
				}
			}
		})
	}
}

// running0 is a new workflow ns/wf: its first pass starts its pod.
func running0() *wfv1.Workflow {
	wf := running()
	wf.Status = wfv1.WorkflowStatus{}
	return wf
}

// A pass that loses its write to a newer one ends after persist: no effects, looked at again soon.
func TestADroppedWriteEndsThePassBeforeItsEffects(t *testing.T) {
	wf := running0()
	u := workflow(t, wf, extstatus.Extensions{}, "10")
	f := newFixture(t, Options{}, u)
	f.cache(u)
	f.writeMeanwhile(func(u *unstructured.Unstructured) { u.SetUID("recreated-uid") })
	requeue, err := f.c.reconcile(t.Context(), "ns/wf")
	if err != nil || requeue != staleRequeue {
		t.Fatalf("reconcile = %s, %v; want the key looked at again in %s", requeue, err, staleRequeue)
	}
	if got := calls(f.kube); !sameCalls(got, []string{"create pods wf"}) {
		t.Errorf("pod calls %q: a dropped pass releases and collects nothing", got)
	}
}

// phaseCount is how many times phase was timed.
func phaseCount(t *testing.T, reg *prometheus.Registry, phase string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "wfguard_phase_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == phase {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	t.Fatalf("no series for phase %s", phase)
	return 0
}

// docs/architecture.md's phase table is the running flow, in its order.
func TestTheArchitecturePageListsTheRunningPhasesInOrder(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, ph := range (&Controller{}).runningPhases() {
		at := strings.Index(string(doc), "| `"+ph.name+"` |")
		if at <= last {
			t.Fatalf("docs/architecture.md does not list phase %s after the ones before it (at %d, previous %d)", ph.name, at, last)
		}
		last = at
	}
}
