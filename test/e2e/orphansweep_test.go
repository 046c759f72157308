package e2e_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// mutedHandler drops the notifications of an informer while muted, so nothing but the periodic sweep can
// bring a workflow key to the queue.
type mutedHandler struct {
	muted *atomic.Bool
	next  cache.ResourceEventHandler
}

func (m mutedHandler) OnAdd(obj any, initial bool) {
	if !m.muted.Load() {
		m.next.OnAdd(obj, initial)
	}
}

func (m mutedHandler) OnUpdate(old, obj any) {
	if !m.muted.Load() {
		m.next.OnUpdate(old, obj)
	}
}

func (m mutedHandler) OnDelete(obj any) {
	if !m.muted.Load() {
		m.next.OnDelete(obj)
	}
}

func TestThePeriodicSweepAloneReleasesThePodOfADeletedWorkflow(t *testing.T) {
	var muted atomic.Bool
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}, sweep: time.Second,
		wrapHandler: func(_ string, h cache.ResourceEventHandler) cache.ResourceEventHandler {
			return mutedHandler{muted: &muted, next: h}
		}})
	wf := e.Submit(`
metadata: {name: swept}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`)
	running := e.WaitFor(wf.Name, "its pod running", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "swept")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	pod := e.PodOf(running, "swept")
	if len(pod.Finalizers) == 0 {
		t.Fatalf("pod %s has no status finalizer", pod.Name)
	}
	before := e.Metric("wfguard_pod_finalizers_released_total", map[string]string{"reason": "orphaned"})
	// From here no informer notifies the controller: the deletion below reaches the queue only by the sweep.
	muted.Store(true)
	if err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Delete(t.Context(), wf.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var released *corev1.Pod
	harness.Until(t, "the sweep released the orphaned pod's finalizer", 30*time.Second, func(ctx context.Context) bool {
		p, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		released = p
		return err == nil && !slices.Contains(p.Finalizers, common.FinalizerPodStatus)
	})
	// It still names its deleted workflow, so the garbage collector deletes it (this control plane runs none):
	// the release only removes the finalizer, as argo's does.
	if released.Labels[common.LabelKeyCompleted] == "true" {
		t.Errorf("the released orphan was labelled completed; only an orphan nothing else deletes needs the label")
	}
	// The controller counts a release once its PATCH returns, which the GET above can beat.
	rose := func() float64 {
		return e.Metric("wfguard_pod_finalizers_released_total", map[string]string{"reason": "orphaned"}) - before
	}
	harness.Until(t, "the sweep's release counted as orphaned", 30*time.Second, func(context.Context) bool { return rose() >= 1 })
	if got := rose(); got != 1 {
		t.Errorf("released_total{reason=orphaned} rose by %v, want 1", got)
	}
}
