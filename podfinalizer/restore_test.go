package podfinalizer

import (
	"context"
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

func TestRestoreWatchLabelsBackOnlyAPodSomeoneElseLabelledCompleted(t *testing.T) {
	const restored = "Warning PodCompletedLabelRestored Node wf.a: its pod p was labelled workflows.argoproj.io/completed=true while the node was Running; the label is set back to false so the controller watches the pod until the node's final state is recorded"
	for _, tc := range []struct {
		sentence string
		stored   *corev1.Pod // on the API server; nil: gone
		read     *corev1.Pod // as the pass read it past the cache
		// wantLabel is the completed label of the pod returned (to assess) and of the stored one.
		wantLabel, wantStored string
		wantErr               bool
		wantPatches           int
		wantEvents            []string
	}{
		{sentence: "a pod not labelled completed is assessed as read and not patched",
			stored: pod("p", "wf", "u1", "id"), read: pod("p", "wf", "u1", "id")},
		{sentence: "a pod labelled completed by someone else is labelled back false, counted, and a Warning Event says so",
			stored: labelled(pod("p", "wf", "u1", "id")), read: labelled(pod("p", "wf", "u1", "id")),
			wantLabel: "false", wantStored: "false", wantPatches: 1, wantEvents: []string{restored}},
		{sentence: "a pod replaced by another of the same name since it was read is left alone, and the error says so",
			stored: labelled(pod("p", "wf", "u1", "id")), read: anOlderPod(labelled(pod("p", "wf", "u1", "id"))),
			wantLabel: "true", wantStored: "true", wantErr: true, wantPatches: 1},
		{sentence: "a pod that is gone is returned as read, and the error says so",
			read: labelled(pod("p", "wf", "u1", "id")), wantLabel: "true", wantErr: true, wantPatches: 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var stored []*corev1.Pod
			if tc.stored != nil {
				stored = append(stored, tc.stored)
			}
			f := newFixture(t, Config{}, stored...)
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "u1"}}
			got, err := f.r.RestoreWatch(context.Background(), wf, &wfv1.NodeStatus{Name: "wf.a", Phase: wfv1.NodeRunning}, tc.read)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if got.Labels[LabelCompleted] != tc.wantLabel {
				t.Errorf("pod to assess labelled %q, want %q", got.Labels[LabelCompleted], tc.wantLabel)
			}
			if tc.stored != nil {
				onServer, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if onServer.Labels[LabelCompleted] != tc.wantStored {
					t.Errorf("stored pod labelled %q, want %q", onServer.Labels[LabelCompleted], tc.wantStored)
				}
			}
			if n := f.patches(); n != tc.wantPatches {
				t.Errorf("%d patches, want %d", n, tc.wantPatches)
			}
			if n := testutil.ToFloat64(f.r.metrics.completedRestored); n != float64(len(tc.wantEvents)) {
				t.Errorf("restores counted = %v, want %d", n, len(tc.wantEvents))
			}
			if got := recorded(f.recorder); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events = %q, want %q", got, tc.wantEvents)
			}
		})
	}
}

// labelled is p labelled completed, as someone else than the controller may label it.
func labelled(p *corev1.Pod) *corev1.Pod {
	p.Labels[LabelCompleted] = "true"
	return p
}

// anOlderPod is p with the UID of a pod of the same name that was replaced since.
func anOlderPod(p *corev1.Pod) *corev1.Pod {
	p.UID = "an-older-pod"
	return p
}

// recorded is the Events the fake recorder holds, oldest first.
func recorded(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
