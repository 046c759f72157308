package podgc

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestWhichPodsAStrategyDeletes(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	nodes := wfv1.Nodes{
		"ok":     {Phase: wfv1.NodeSucceeded, TaskResultSynced: ptr.To(true)},
		"failed": {Phase: wfv1.NodeFailed, TaskResultSynced: ptr.To(true)},
		"wait":   {Phase: wfv1.NodeSucceeded, TaskResultSynced: ptr.To(false)},
		"daemon": {Phase: wfv1.NodeRunning, Daemoned: ptr.To(true)},
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("u-" + name)}}
	}
	pods := map[string]*corev1.Pod{"ok": pod("ok"), "failed": pod("failed"), "wait": pod("wait"), "daemon": pod("daemon")}
	for _, tc := range []struct {
		sentence string
		strategy wfv1.PodGCStrategy
		phase    wfv1.WorkflowPhase
		want     []string
	}{
		{"OnPodCompletion deletes final pods, never a waiting node's nor a serving daemon's", wfv1.PodGCOnPodCompletion, wfv1.WorkflowRunning, []string{"failed", "ok"}},
		{"OnPodSuccess deletes only succeeded final pods", wfv1.PodGCOnPodSuccess, wfv1.WorkflowRunning, []string{"ok"}},
		{"OnWorkflowCompletion waits for the workflow", wfv1.PodGCOnWorkflowCompletion, wfv1.WorkflowRunning, nil},
		{"OnWorkflowCompletion deletes every pod once it completed", wfv1.PodGCOnWorkflowCompletion, wfv1.WorkflowFailed, []string{"daemon", "failed", "ok", "wait"}},
		{"OnWorkflowSuccess keeps the pods of a failed workflow", wfv1.PodGCOnWorkflowSuccess, wfv1.WorkflowFailed, nil},
		{"OnWorkflowSuccess deletes every pod of a succeeded one", wfv1.PodGCOnWorkflowSuccess, wfv1.WorkflowSucceeded, []string{"daemon", "failed", "ok", "wait"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{Spec: wfv1.WorkflowSpec{PodGC: &wfv1.PodGC{Strategy: tc.strategy, DeleteDelayDuration: "0s"}},
				Status: wfv1.WorkflowStatus{Phase: tc.phase, Nodes: nodes}}
			decisions, err := PodsToDelete(wf, pods, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range decisions {
				got = append(got, d.Pod.Name)
			}
			slices.Sort(got)
			if len(got) != len(tc.want) {
				t.Fatalf("deleted %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("deleted %v, want %v", got, tc.want)
				}
			}
		})
	}
}
