package explain

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
)

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

func TestMissingOutputsAreTheDeclaredOnesWithoutAValue(t *testing.T) {
	tmpl := &wfv1.Template{Script: &wfv1.ScriptTemplate{}, Outputs: wfv1.Outputs{
		Parameters: []wfv1.Parameter{{Name: "p"}, {Name: "q"}},
		Artifacts:  []wfv1.Artifact{{Name: "a"}, {Name: "opt", Optional: true}}}}
	cases := []struct {
		name    string
		outputs *wfv1.Outputs
		want    []string
	}{
		{"no outputs lack everything but the optional artifact", nil, []string{"parameter p", "parameter q", "artifact a", "result"}},
		{"a parameter without a value is missing", &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p"}, {Name: "q", Value: wfv1.AnyStringPtr("1")}},
			Artifacts: []wfv1.Artifact{{Name: "a"}}, Result: ptr("r")}, []string{"parameter p"}},
		{"complete outputs lack nothing", &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("")}, {Name: "q", Value: wfv1.AnyStringPtr("1")}},
			Artifacts: []wfv1.Artifact{{Name: "a"}}, Result: ptr("")}, nil},
	}
	for _, tc := range cases {
		if got := MissingOutputs(tmpl, tc.outputs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := MissingOutputs(nil, nil); got != nil {
		t.Errorf("an unknown template declares nothing: %v", got)
	}
}

func ptr(s string) *string { return &s }

// snapshot is a workflow "wf" with a steps root holding the given children.
func snapshot(mutate func(*wfv1.Workflow, *inspect.Snapshot), children ...wfv1.NodeStatus) *inspect.Snapshot {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "u1", CreationTimestamp: metav1.NewTime(t0)}}
	wf.Spec.Templates = []wfv1.Template{
		{Name: "wait", Suspend: &wfv1.SuspendTemplate{Duration: "10m"}},
		{Name: "gate", Suspend: &wfv1.SuspendTemplate{}},
		{Name: "run", Container: &corev1.Container{Image: "alpine"}},
	}
	wf.Status.Phase = wfv1.WorkflowRunning
	wf.Status.StartedAt = metav1.NewTime(t0)
	root := wfv1.NodeStatus{ID: "wf", Name: "wf", DisplayName: "wf", Type: wfv1.NodeTypeSteps, Phase: wfv1.NodeRunning, StartedAt: metav1.NewTime(t0)}
	wf.Status.Nodes = wfv1.Nodes{}
	for _, c := range children {
		root.Children = append(root.Children, c.ID)
		wf.Status.Nodes[c.ID] = c
	}
	wf.Status.Nodes["wf"] = root
	s := &inspect.Snapshot{Workflow: inspect.Workflow{WF: wf}}
	if mutate != nil {
		mutate(wf, s)
	}
	return s
}

func podNode(id string, phase wfv1.NodePhase) wfv1.NodeStatus {
	f := false
	return wfv1.NodeStatus{ID: id, Name: "wf." + id, DisplayName: id, Type: wfv1.NodeTypePod, TemplateName: "run", Phase: phase,
		TaskResultSynced: &f, StartedAt: metav1.NewTime(t0.Add(time.Minute))}
}

func runningPod(id string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: map[string]string{"workflows.argoproj.io/node-id": id},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: "u1"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func TestEachStateNamesItsWait(t *testing.T) {
	suspend := func(id, tmpl string) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: id, Name: "wf." + id, DisplayName: id, Type: wfv1.NodeTypeSuspend, TemplateName: tmpl, Phase: wfv1.NodeRunning,
			StartedAt: metav1.NewTime(t0.Add(2 * time.Minute))}
	}
	parallel := int64(1)
	yes := true
	cases := []struct {
		name      string
		snap      *inspect.Snapshot
		node      string
		wantOn    string
		wantUntil time.Time
		wfWait    string
	}{
		{"a suspend node with a duration waits on its timer", snapshot(nil, suspend("s", "wait")), "s", WaitTimer, t0.Add(12 * time.Minute), ""},
		{"a suspend node without one waits for a resume", snapshot(nil, suspend("s", "gate")), "s", WaitResume, time.Time{}, ""},
		{"a pending node waits on parallelism while the limit is used", snapshot(func(wf *wfv1.Workflow, s *inspect.Snapshot) {
			wf.Spec.Parallelism = &parallel
			s.Pods = []*corev1.Pod{runningPod("a")}
		}, podNode("a", wfv1.NodeRunning), podNode("b", wfv1.NodePending)), "b", WaitParallelism, time.Time{}, ""},
		{"without the limit the same node waits for its pod", snapshot(func(wf *wfv1.Workflow, s *inspect.Snapshot) {
			s.Pods = []*corev1.Pod{runningPod("a")}
		}, podNode("a", wfv1.NodeRunning), podNode("b", wfv1.NodePending)), "b", WaitPodCreation, time.Time{}, ""},
		{"an accepted suspension holds the workflow", snapshot(func(wf *wfv1.Workflow, s *inspect.Snapshot) {
			s.Workflow.Ext = extstatus.Extensions{Suspended: &yes}
		}), "wf", WaitChildren, time.Time{}, WaitWorkflowSuspended},
		{"an accepted shutdown stops running pods", snapshot(func(wf *wfv1.Workflow, s *inspect.Snapshot) {
			s.Workflow.Ext = extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyTerminate}
			s.Pods = []*corev1.Pod{runningPod("a")}
		}, podNode("a", wfv1.NodeRunning)), "a", WaitShutdown, time.Time{}, WaitShutdown},
		{"a workflow no controller picked up waits on one", snapshot(func(wf *wfv1.Workflow, s *inspect.Snapshot) {
			wf.Status = wfv1.WorkflowStatus{}
		}), "", "", time.Time{}, WaitController},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := Explain(tc.snap, Options{Now: t0.Add(5 * time.Minute)})
			if tc.node != "" {
				i := slices.IndexFunc(tree.Nodes, func(n Node) bool { return n.DisplayName == tc.node })
				if i < 0 {
					t.Fatalf("no node %s in %+v", tc.node, tree.Nodes)
				}
				if w := tree.Nodes[i].Wait; w == nil || w.On != tc.wantOn || !w.Until.Equal(tc.wantUntil) {
					t.Errorf("wait %+v, want %s until %s", w, tc.wantOn, tc.wantUntil)
				}
			}
			got := ""
			if tree.Wait != nil {
				got = tree.Wait.On
			}
			if got != tc.wfWait {
				t.Errorf("workflow waits on %q, want %q", got, tc.wfWait)
			}
		})
	}
}

func TestTheTreeDrawsBranchesForLaterSiblings(t *testing.T) {
	nodes := []Node{{Depth: 0}, {Depth: 1}, {Depth: 2}, {Depth: 2}, {Depth: 1}, {Depth: 2}}
	want := []string{"", "├─ ", "│  ├─ ", "│  └─ ", "└─ ", "   └─ "}
	for i := range nodes {
		if got := treePrefix(nodes, i); got != want[i] {
			t.Errorf("node %d: %q, want %q", i, got, want[i])
		}
	}
}

func TestAPodIsMatchedByItsOwnersUIDNotByName(t *testing.T) {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", UID: "new"}}
	old := runningPod("a")
	old.OwnerReferences[0].UID = "old" // the pod of a deleted workflow of the same name
	if got := PodsByNode(wf, []*corev1.Pod{old}); len(got) != 0 {
		t.Errorf("a foreign pod was matched: %v", got)
	}
}
