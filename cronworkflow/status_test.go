package cronworkflow

import (
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func run(name string, phase wfv1.WorkflowPhase) *wfv1.Workflow {
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid")}, Status: wfv1.WorkflowStatus{Phase: phase}}
}

func TestReconcileActive(t *testing.T) {
	ref := func(name string) corev1.ObjectReference { return activeRef(run(name, "")) }
	for _, tc := range []struct {
		name          string
		active        []string
		runs          []*wfv1.Workflow
		lookup        map[string]*wfv1.Workflow // names the API server still has; absent means gone
		wantActive    []string
		wantSucceeded int64
		wantFailed    int64
		wantCompleted bool
	}{
		{name: "a running run missing from active is added", runs: []*wfv1.Workflow{run("a", wfv1.WorkflowRunning)}, wantActive: []string{"a"}},
		{name: "a run that succeeded leaves active and is counted", active: []string{"a"},
			runs: []*wfv1.Workflow{run("a", wfv1.WorkflowSucceeded)}, wantSucceeded: 1, wantCompleted: true},
		{name: "failed and errored runs count as failed", active: []string{"a", "b"},
			runs: []*wfv1.Workflow{run("a", wfv1.WorkflowFailed), run("b", wfv1.WorkflowError)}, wantFailed: 2, wantCompleted: true},
		{name: "a completed run never listed as active is not counted", runs: []*wfv1.Workflow{run("a", wfv1.WorkflowSucceeded)}},
		{name: "an active run the cache lacks but the API server has stays active", active: []string{"a"},
			lookup: map[string]*wfv1.Workflow{"a": run("a", wfv1.WorkflowRunning)}, wantActive: []string{"a"}},
		{name: "an active run gone from the API server leaves active uncounted", active: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := &wfv1.CronWorkflowStatus{}
			for _, n := range tc.active {
				status.Active = append(status.Active, ref(n))
			}
			lookup := func(ref corev1.ObjectReference) (*wfv1.Workflow, bool) {
				wf, ok := tc.lookup[ref.Name]
				return wf, !ok
			}
			completed := reconcileActive(status, tc.runs, lookup)
			var got []string
			for _, r := range status.Active {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tc.wantActive) || status.Succeeded != tc.wantSucceeded || status.Failed != tc.wantFailed || completed != tc.wantCompleted {
				t.Fatalf("active %v succeeded %d failed %d completed %v; want %v %d %d %v", got, status.Succeeded, status.Failed,
					completed, tc.wantActive, tc.wantSucceeded, tc.wantFailed, tc.wantCompleted)
			}
		})
	}
}

func TestValidateSpecBoundsTheSchedules(t *testing.T) {
	many := make([]string, maxSchedules+1)
	for i := range many {
		many[i] = "* * * * *"
	}
	for _, tc := range []struct {
		sentence  string
		schedules []string
		wantErr   string
	}{
		{"as many schedules as the bound are accepted", many[:maxSchedules], ""},
		{"one more is a spec error", many, "101 schedules, more than the 100"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			_, err := validateSpec(&wfv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: wfv1.CronWorkflowSpec{Schedules: tc.schedules}})
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("validateSpec = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
