package explain

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Pins WriteHuman's output byte for byte, for a tree with as little as can be and one with every part.
func TestTheHumanRenderingReadsExactlyAsBefore(t *testing.T) {
	now := t0.Add(time.Hour)
	full := Tree{Namespace: "ns", Name: "wf", UID: "u-1", Phase: "Running", Message: "child failed", Created: t0,
		StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(30 * time.Minute), LastWrite: t0.Add(59 * time.Minute), Suspended: true,
		Shutdown: "Stop", Parallelism: 2, Now: now,
		Wait: &Wait{On: WaitController, Since: t0.Add(time.Minute), Until: now.Add(90 * time.Second), Detail: "the deadline"},
		Nodes: []Node{
			{ID: "wf", DisplayName: "wf", Type: "DAG", Phase: "Running",
				Wait: &Wait{On: WaitController, Detail: "its children"}},
			{ID: "wf-1", DisplayName: "a", Depth: 1, Type: "Pod", Phase: "Succeeded", Result: ResultComplete,
				Pod:   &Pod{Name: "wf-a-1", Phase: "Succeeded", Finalizer: "held", Deleting: true},
				Notes: []string{"first note", "second note"}},
			{ID: "wf-2", DisplayName: "b", Depth: 1, Type: "Pod", Phase: "Running",
				Pod:  &Pod{Name: "wf-b-2", Phase: "Running", Finalizer: "held"},
				Wait: &Wait{On: WaitController, Since: t0.Add(2 * time.Minute), Until: now.Add(-time.Minute), Detail: "the result"}},
			{ID: "wf-3", DisplayName: "c", Depth: 2, Type: "Suspend"},
		},
		Actions: []Action{{Name: "act-1", Action: "Resume", Created: t0.Add(40 * time.Minute)},
			{Name: "act-2", Action: "Stop", Created: t0.Add(50 * time.Minute), Recorded: true}},
		Skipped: []string{"pods: forbidden", "task results: forbidden"},
	}
	for _, tc := range []struct {
		sentence string
		tree     Tree
		want     string
	}{
		{"an empty tree", Tree{Namespace: "ns", Name: "wf", UID: "u-1", Created: t0, Now: now}, `Workflow ns/wf  (no phase)  uid u-1
  created 2030-01-01T10:00:00Z (1h0m0s ago)
  suspended: no  shutdown: -  parallelism: -

NODE  TYPE  PHASE  POD  POD PHASE  FINALIZER  RESULT

Waits:
  nothing: no node waits

Pending actions:
  none
`},
		{"a tree with every part", full, `Workflow ns/wf  Running  uid u-1
  message: child failed
  created 2030-01-01T10:00:00Z (1h0m0s ago), started 2030-01-01T10:00:01Z (59m59s ago), finished 2030-01-01T10:30:00Z (30m0s ago), last written 2030-01-01T10:59:00Z (1m0s ago)
  suspended: yes  shutdown: Stop  parallelism: 2
  waits on controller since 2030-01-01T10:01:00Z (59m0s ago), until 2030-01-01T11:01:30Z (in 1m30s): the deadline

NODE     TYPE     PHASE      POD     POD PHASE             FINALIZER  RESULT
wf       DAG      Running    -       -                     -          -
├─ a     Pod      Succeeded  wf-a-1  Succeeded (deleting)  held       complete
└─ b     Pod      Running    wf-b-2  Running               held       -
   └─ c  Suspend  -          -       -                     -          -

Waits:
  wf (wf): controller: its children
  b (wf-2): controller since 2030-01-01T10:02:00Z (58m0s ago), until 2030-01-01T10:59:00Z (passed 1m0s ago): the result

Notes:
  a (wf-1): first note
  a (wf-1): second note

Pending actions:
  act-1 Resume, created 2030-01-01T10:40:00Z (20m0s ago)
  act-2 Stop, created 2030-01-01T10:50:00Z (10m0s ago): applied and recorded in status.appliedActions; its outcome is still to be written

Not read:
  skipped: pods: forbidden
  skipped: task results: forbidden
`},
	} {
		var b strings.Builder
		if err := WriteHuman(&b, tc.tree); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.sentence, got, tc.want)
		}
	}
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTheHumanRenderingReportsAWriteThatFails(t *testing.T) {
	if err := WriteHuman(fullWriter{}, Tree{Nodes: []Node{{ID: "a"}}}); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v, want the writer's", err)
	}
}
