package bench

import (
	"context"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodePod is the benchmark pod of node id at the given stage: "" created, "bound", "running", "succeeded".
func nodePod(id, stage string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: map[string]string{common.AnnotationKeyNodeID: id,
		common.AnnotationKeyNodeName: "wf.t1"}}}
	switch stage {
	case "succeeded":
		pod.Status.Phase = corev1.PodSucceeded
		fallthrough
	case "running":
		if pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodRunning
		}
		fallthrough
	case "bound":
		pod.Spec.NodeName = "simnode"
	}
	return pod
}

func nodeResult(id string, complete bool) *wfv1.WorkflowTaskResult {
	r := &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{}},
		NodeResult: wfv1.NodeResult{Outputs: nodeOutputs()}}
	if complete {
		r.Labels[common.LabelKeyReportOutputsCompleted] = "true"
	}
	return r
}

// awaitInBackground runs awaitNode and hands back each write it makes and its result.
func awaitInBackground(t *testing.T, o *observer, id string) (writes chan nodeProgress, done chan nodeProgress) {
	writes, done = make(chan nodeProgress), make(chan nodeProgress, 1)
	go func() {
		p, err := awaitNode(t.Context(), o, id, func(p nodeProgress) error {
			writes <- p
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	return writes, done
}

func TestThePipelineRawClientWritesANodeRunningOnceWhenItsPodRuns(t *testing.T) {
	t.Run("a node whose pod completes before it is seen running writes no progress: its final write carries the host", func(t *testing.T) {
		o := newObserver("ns")
		writes, done := awaitInBackground(t, o, "n1")
		o.onPod(nodePod("n1", "bound"))
		o.onPod(nodePod("n1", "succeeded"))
		o.onResult(nodeResult("n1", true))
		select {
		case p := <-writes:
			t.Fatalf("wrote progress %+v of a node never seen running", p)
		case got := <-done:
			if want := (nodeProgress{Host: "simnode", Outputs: true}); got != want {
				t.Errorf("progress at completion = %+v, want %+v", got, want)
			}
		}
	})
	t.Run("a pod seen running writes its node Running with the host, once however its progress changes after", func(t *testing.T) {
		o := newObserver("ns")
		writes, done := awaitInBackground(t, o, "n1")
		o.onPod(nodePod("n1", "bound"))
		o.onPod(nodePod("n1", "running"))
		if got, want := <-writes, (nodeProgress{Host: "simnode", Running: true}); got != want {
			t.Errorf("progress written = %+v, want %+v", got, want)
		}
		o.onResult(nodeResult("n1", false)) // outputs before completion: no second write
		o.onPod(nodePod("n1", "succeeded"))
		o.onResult(nodeResult("n1", true))
		select {
		case p := <-writes:
			t.Errorf("wrote progress %+v a second time", p)
		case got := <-done:
			if want := (nodeProgress{Host: "simnode", Running: true, Outputs: true}); got != want {
				t.Errorf("progress at completion = %+v, want %+v", got, want)
			}
		}
	})
	t.Run("a cancelled wait says which node it waited for", func(t *testing.T) {
		o := newObserver("ns")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := awaitNode(ctx, o, "n7", func(nodeProgress) error { return nil }); err == nil || !strings.Contains(err.Error(), "n7") {
			t.Errorf("error = %v, want one naming node n7", err)
		}
	})
}
