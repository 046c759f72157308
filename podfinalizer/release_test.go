package podfinalizer

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOnlyPodsWhoseFinalStateIsPersistedAreReleasable(t *testing.T) {
	tr, fa := true, false
	pod := func(name string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	}
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{
		"done":    {Phase: wfv1.NodeSucceeded, TaskResultSynced: &tr},
		"waiting": {Phase: wfv1.NodeSucceeded, TaskResultSynced: &fa},
		"running": {Phase: wfv1.NodeRunning},
	}}}
	pods := map[string]*corev1.Pod{
		"done": pod("done", Finalizer, "other/keep"), "waiting": pod("waiting", Finalizer),
		"running": pod("running", Finalizer), "released": pod("released", "other/keep"), "unknown": pod("unknown", Finalizer),
	}
	got := names(Releasable(wf, pods))
	if len(got) != 1 || got[0] != "done" {
		t.Errorf("releasable while running = %v, want [done]", got)
	}
	wf.Status.Phase = wfv1.WorkflowFailed
	if got := names(Releasable(wf, pods)); len(got) != 4 {
		t.Errorf("releasable once the workflow completed = %v, want every pod holding our finalizer", got)
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
