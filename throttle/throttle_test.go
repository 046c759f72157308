package throttle

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func workflow(ns, name string, priority int32, age time.Duration) *wfv1.Workflow {
	created := metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).Add(-age))
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
		Spec: wfv1.WorkflowSpec{Priority: &priority}}
}

func TestThrottle(t *testing.T) {
	type step struct {
		admit  *wfv1.Workflow // Admit this one...
		remove string         // ...or Remove this key
		want   bool           // what Admit returns
		woken  []string       // keys woken by this step
	}
	for _, tc := range []struct {
		sentence     string
		total, perNS int
		steps        []step
	}{
		{"no limits admit every workflow", 0, 0, []step{
			{admit: workflow("a", "1", 0, 0), want: true},
			{admit: workflow("a", "2", 0, 0), want: true},
		}},
		{"parallelism holds the next workflow until a running one ends, then wakes it", 1, 0, []step{
			{admit: workflow("a", "1", 0, 0), want: true},
			{admit: workflow("b", "2", 0, 0), want: false},
			{admit: workflow("a", "1", 0, 0), want: true},
			{remove: "a/1", woken: []string{"b/2"}},
			{admit: workflow("b", "2", 0, 0), want: true},
		}},
		{"namespaceParallelism counts per namespace", 0, 1, []step{
			{admit: workflow("a", "1", 0, 0), want: true},
			{admit: workflow("b", "1", 0, 0), want: true},
			{admit: workflow("a", "2", 0, 0), want: false},
			{remove: "b/1"},
			{remove: "a/1", woken: []string{"a/2"}},
		}},
		{"a freed slot goes to the highest priority, then the oldest", 1, 0, []step{
			{admit: workflow("a", "run", 0, 0), want: true},
			{admit: workflow("a", "old", 0, time.Hour), want: false},
			{admit: workflow("a", "new-urgent", 5, 0), want: false},
			{admit: workflow("a", "older", 0, 2*time.Hour), want: false},
			{remove: "a/run", woken: []string{"a/new-urgent"}},
			{remove: "a/new-urgent", woken: []string{"a/older"}},
		}},
		{"a workflow deleted while waiting leaves the line", 1, 0, []step{
			{admit: workflow("a", "1", 0, 0), want: true},
			{admit: workflow("a", "2", 0, 0), want: false},
			{remove: "a/2"},
			{remove: "a/1"},
			{admit: workflow("a", "3", 0, 0), want: true},
		}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var woken []string
			th := New(func() (int, int) { return tc.total, tc.perNS }, func(k string) { woken = append(woken, k) })
			for i, s := range tc.steps {
				woken = nil
				if s.admit != nil {
					if got := th.Admit(s.admit); got != s.want {
						t.Fatalf("step %d: Admit(%s) = %v, want %v", i, s.admit.Name, got, s.want)
					}
				} else {
					th.Remove(s.remove)
				}
				if !slices.Equal(woken, s.woken) {
					t.Fatalf("step %d: woken %v, want %v", i, woken, s.woken)
				}
			}
		})
	}
}

func TestRefillAdmitsWaitingWorkflowsWhenTheLimitRises(t *testing.T) {
	limit := 1
	var woken []string
	th := New(func() (int, int) { return limit, 0 }, func(k string) { woken = append(woken, k) })
	th.Running("a", "running")
	if th.Admit(workflow("a", "next", 0, 0)) {
		t.Fatal("admitted beyond the limit")
	}
	limit = 2
	th.Refill()
	if !slices.Equal(woken, []string{"a/next"}) {
		t.Fatalf("woken %v, want a/next", woken)
	}
}
