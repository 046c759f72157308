package engine

import (
	"context"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/taskresult"
)

// A memoized resubmit (argo's workflow/util.FormulateResubmitWorkflow) copies a failed pod node into the new
// workflow Pending, without a start time, with the old run's outputs and gate: wfguard creates its pod, as
// argo does, instead of taking the missing pod for a deleted one.
func TestAPodNodeThatNeverStartedGetsItsPodCreated(t *testing.T) {
	ok := func(n *wfv1.NodeStatus) {}
	for _, tc := range []struct {
		sentence  string
		edit      func(*wfv1.NodeStatus) // of node a, once the first pass created it
		wantPod   bool                   // a pod of a is created in the second pass
		wantPhase wfv1.NodePhase
	}{
		{sentence: "a Pending pod node without a start time is created again, with a fresh start, gate and outputs",
			edit: func(n *wfv1.NodeStatus) {
				n.StartedAt = metav1.Time{}
				n.Outputs = &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("old")}}}
				synced := true
				n.TaskResultSynced = &synced
			},
			wantPod: true, wantPhase: wfv1.NodePending},
		{sentence: "a Pending pod node that started and lost its pod past the grace is 'pod deleted', not created again",
			edit: ok, wantPhase: wfv1.NodeError},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			p := passOver(t, chain)
			if err := (&Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}).Execute(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			id := p.WF.NodeID("chain[0].a")
			n := p.WF.Status.Nodes[id]
			tc.edit(&n)
			p.WF.Status.Nodes[id] = n

			next := &Pass{WF: p.WF, Ext: p.Ext, Now: p.Now.Add(time.Minute), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
			AssessNodes(next)
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			if err := (&Engine{Pods: pods}).Execute(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			got := next.WF.Status.Nodes[id]
			if _, created := pods.created[id]; created != tc.wantPod || got.Phase != tc.wantPhase {
				t.Fatalf("pod created: %v, node %s %q; want %v, %s", created, got.Phase, got.Message, tc.wantPod, tc.wantPhase)
			}
			if tc.wantPod && (!got.StartedAt.Equal(&metav1.Time{Time: next.Now}) || got.Outputs != nil || taskresult.Synced(&got)) {
				t.Errorf("recreated node started %v, outputs %v, synced %v; want started now, no outputs, gate closed",
					got.StartedAt, got.Outputs, got.TaskResultSynced)
			}
		})
	}
}
