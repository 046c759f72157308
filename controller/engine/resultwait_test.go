package engine

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/extstatus"
)

// A result wait expires on evidence only: the node's own pod seen and its result read on the server. A
// lagging cache or a failed read must not end a node whose executor did report (chaos: I11).
func TestAResultWaitExpiresOnlyOnEvidence(t *testing.T) {
	const timeout = 4 * time.Second
	since := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	succeededPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-step-1"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "wait", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
			{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}}
	for _, tc := range []struct {
		sentence   string
		podSeen    bool
		readFailed bool
		after      time.Duration
		want       wfv1.NodePhase
		wantMsg    string // substring
	}{
		{"a node whose pod is seen and whose result is read absent times out at the timeout",
			true, false, timeout, wfv1.NodeError, "TaskResultTimeout"},
		{"a node whose pod is seen waits before the timeout",
			true, false, timeout - time.Second, wfv1.NodeRunning, WaitingForTaskResultPrefix},
		{"a node whose pod the cache lacks and the server did not confirm gone does not time out at the timeout",
			false, false, timeout, wfv1.NodeRunning, WaitingForTaskResultPrefix},
		{"a node whose result could not be read past the cache does not time out at the timeout",
			true, true, timeout, wfv1.NodeRunning, WaitingForTaskResultPrefix},
		{"a wait that cannot be verified still ends at twice the timeout, saying why",
			true, true, 2 * timeout, wfv1.NodeError, "could not be read past the cache"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"},
				Spec: wfv1.WorkflowSpec{Entrypoint: "step", Templates: []wfv1.Template{{Name: "step", Container: &corev1.Container{Image: "busybox"}}}},
				Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{"w": {ID: "w", Name: "w", Type: wfv1.NodeTypePod,
					TemplateName: "step", Phase: wfv1.NodeRunning, StartedAt: metav1.NewTime(since.Add(-time.Minute)),
					Message: WaitingForTaskResultPrefix + " (since " + since.Format(time.RFC3339) + ")", TaskResultSynced: new(bool)}}}}
			p := &Pass{WF: wf, Ext: &extstatus.Extensions{ResultWaits: map[string]metav1.Time{"w": metav1.NewTime(since)}},
				Now: since.Add(tc.after), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: timeout}
			if tc.podSeen {
				p.Pods["w"] = succeededPod.DeepCopy()
			} else {
				p.Unverified = map[string]bool{"w": true} // missing from the cache, not confirmed gone on the server
			}
			if tc.readFailed {
				p.ResultUnverified = map[string]bool{"w": true}
			}
			AssessNodes(p)
			n := wf.Status.Nodes["w"]
			if n.Phase != tc.want || !strings.Contains(n.Message, tc.wantMsg) {
				t.Fatalf("node %s %q, want %s containing %q", n.Phase, n.Message, tc.want, tc.wantMsg)
			}
			if n.Phase == wfv1.NodeRunning && p.requeueAt.IsZero() {
				t.Fatal("a node still waiting asked for no further pass")
			}
		})
	}
}
