package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOnlyChangesThatDecideNothingMayWaitForTheCoalescingWindow(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "wf"},
			"status": map[string]any{"phase": "Running", "nodes": map[string]any{
				"a": map[string]any{"id": "a", "phase": "Pending"},
			}},
		}}
	}
	set := func(path []string, v any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, path...) }
	}
	cases := []struct {
		sentence string
		change   func(*unstructured.Unstructured)
		want     bool
	}{
		{"the node got its host", set([]string{"status", "nodes", "a", "hostNodeName"}, "n1"), true},
		{"the node went from Pending to Running", set([]string{"status", "nodes", "a", "phase"}, "Running"), true},
		{"the node's exit code arrived", set([]string{"status", "nodes", "a", "outputs"}, map[string]any{"exitCode": "0"}), true},
		{"the node's result became synced", set([]string{"status", "nodes", "a", "taskResultSynced"}, true), true},
		{"the node succeeded", set([]string{"status", "nodes", "a", "phase"}, "Succeeded"), false},
		{"the node got a waiting message", set([]string{"status", "nodes", "a", "message"}, "waiting for its task result"), false},
		{"a new node was created", set([]string{"status", "nodes", "b"}, map[string]any{"id": "b", "phase": "Pending"}), false},
		{"the workflow completed", set([]string{"status", "phase"}, "Succeeded"), false},
		{"an action was recorded", set([]string{"status", "appliedActions"}, []any{"x"}), false},
		{"a label changed", set([]string{"metadata", "labels"}, map[string]any{"k": "v"}), false},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			after := base()
			tc.change(after)
			if got := informationalOnly(base(), after); got != tc.want {
				t.Errorf("informationalOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTheWindowStartsAtTheFirstDeferredPassAndEndsWithAWrite(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}, deferred: map[string]time.Time{}}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		sentence string
		at       time.Time
		want     time.Duration
	}{
		{"the first informational pass waits the whole window", t0, time.Second},
		{"a later one waits only what is left", t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		{"once the window is over it writes", t0.Add(time.Second), 0},
	}
	for _, s := range steps {
		if got := c.coalesce("ns/wf", s.at); got != s.want {
			t.Fatalf("%s: got %s, want %s", s.sentence, got, s.want)
		}
	}
	c.wroteStatus("ns/wf")
	if got := c.coalesce("ns/wf", t0.Add(5*time.Second)); got != time.Second {
		t.Fatalf("after a write a new window starts: got %s", got)
	}
	off := &Controller{deferred: map[string]time.Time{}}
	if got := off.coalesce("ns/wf", t0); got != 0 {
		t.Fatalf("a zero window writes every pass: got %s", got)
	}
}
