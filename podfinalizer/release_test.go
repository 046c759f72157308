package podfinalizer

import (
	"context"
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
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

func TestReleaseRemovesOnlyOurFinalizerFromTheRightPod(t *testing.T) {
	pod := func(uid types.UID, rv string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: uid, ResourceVersion: rv, Finalizers: finalizers}}
	}
	cases := []struct {
		sentence string
		read     *corev1.Pod // what the controller's cache holds
		server   *corev1.Pod // what is stored
		want     []string    // finalizers stored afterwards
		patches  int
	}{
		{"a status write since the read does not stop the release",
			pod("u1", "1", Finalizer, "x.io/theirs"), pod("u1", "7", Finalizer, "x.io/theirs"), []string{"x.io/theirs"}, 1},
		{"a finalizer another party added in front is kept, ours is removed after a re-read",
			pod("u1", "1", Finalizer), pod("u1", "7", "x.io/first", Finalizer), []string{"x.io/first"}, 2},
		{"a same-named pod with another UID is left alone",
			pod("u1", "1", Finalizer), pod("u2", "7", Finalizer), []string{Finalizer}, 1},
		{"a pod that no longer carries it needs no patch",
			pod("u1", "1"), pod("u1", "7", "x.io/theirs"), []string{"x.io/theirs"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewSimpleClientset(tc.server)
			if _, err := RemoveFinalizer(context.Background(), kube, tc.read); err != nil {
				t.Fatal(err)
			}
			stored, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(stored.Finalizers, tc.want) {
				t.Errorf("finalizers = %v, want %v", stored.Finalizers, tc.want)
			}
			patches := 0
			for _, a := range kube.Actions() {
				if a.GetVerb() == "patch" {
					patches++
				}
			}
			if patches != tc.patches {
				t.Errorf("patches = %d, want %d", patches, tc.patches)
			}
		})
	}
}
