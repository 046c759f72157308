package e2e_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const twoThenOne = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: held}
      - {name: b, template: held}
    - - {name: c, template: quick}
  - name: held
    container: {image: alpine, command: ["true"]}
  - name: quick
    container: {image: alpine, command: ["true"]}
`

// settleRevisions records, from a watch on the namespace's pods, the revision at which each pod (by name)
// first showed no status finalizer after holding it, and the one at which it was first labelled completed.
type settleRevisions struct {
	mu                  sync.Mutex
	released, completed map[string]string
}

func watchSettling(t *testing.T, e *env) *settleRevisions {
	t.Helper()
	w, err := e.Kube.CoreV1().Pods(e.Namespace).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &settleRevisions{released: map[string]string{}, completed: map[string]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		held := map[string]bool{}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			has := slices.Contains(pod.Finalizers, common.FinalizerPodStatus)
			s.mu.Lock()
			if _, seen := s.released[pod.Name]; !seen && held[pod.Name] && !has {
				s.released[pod.Name] = pod.ResourceVersion
			}
			if _, seen := s.completed[pod.Name]; !seen && pod.Labels[common.LabelKeyCompleted] == "true" {
				s.completed[pod.Name] = pod.ResourceVersion
			}
			held[pod.Name] = held[pod.Name] || has
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return s
}

func (s *settleRevisions) of(pod string) (released, completed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released[pod], s.completed[pod]
}

func TestCompletedPodsAreLabelledInTheReleasingPatchAndLeaveThePodCache(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"held": {Hold: hold}}}})
	settling := watchSettling(t, e)
	wf := e.Submit(manifest(twoThenOne, "cache"))
	e.WaitFor(wf.Name, "running a and b", 30*time.Second, func(wf *wfv1.Workflow) bool {
		a, b := harness.NodeByName(wf, "cache[0].a"), harness.NodeByName(wf, "cache[0].b")
		return a != nil && b != nil && a.Phase == wfv1.NodeRunning && b.Phase == wfv1.NodeRunning
	})
	harness.Until(t, "caching the two running pods", 30*time.Second, func(context.Context) bool {
		return e.Metric("wfguard_pods_cached", nil) == 2
	})
	close(hold)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	// The cache empties on the patches' watch events; the label counter follows their answers, which may come later.
	harness.Until(t, "emptying the pod cache, every label counted", 30*time.Second, func(context.Context) bool {
		return e.Metric("wfguard_pods_cached", nil) == 0 && e.Metric("wfguard_pods_labelled_completed_total", nil) >= 3
	})
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods on the API server, want 3 (no podGC)", len(pods.Items))
	}
	// The test's own watch may trail the controller's: wait until it has seen each pod's release and label.
	harness.Until(t, "the test's watch seeing every pod released and labelled", 30*time.Second, func(context.Context) bool {
		for _, pod := range pods.Items {
			if released, completed := settling.of(pod.Name); released == "" || completed == "" {
				return false
			}
		}
		return true
	})
	for _, pod := range pods.Items {
		if pod.Labels[common.LabelKeyCompleted] != "true" || slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
			t.Errorf("pod %s: completed=%q finalizers=%v, want completed=true and no status finalizer", pod.Name, pod.Labels[common.LabelKeyCompleted], pod.Finalizers)
		}
		// One write: the patch that released the finalizer is the one that set the label.
		if released, completed := settling.of(pod.Name); released != completed {
			t.Errorf("pod %s lost the finalizer at revision %q and was labelled completed at %q, want one patch", pod.Name, released, completed)
		}
	}
	if got := e.Metric("wfguard_pods_labelled_completed_total", nil); got != 3 {
		t.Errorf("wfguard_pods_labelled_completed_total = %v, want 3", got)
	}
	if got := e.Metric("wfguard_finalizer_released_before_persist_total", nil); got != 0 {
		t.Errorf("released before persist = %v, want 0", got)
	}
	// Our own patch takes the pods out of the cache: none counts as having left it holding the finalizer.
	if got := e.Metric("wfguard_departed_pod_finalizers_released_total", nil); got != 0 {
		t.Errorf("departed pods released = %v, want 0", got)
	}
}

func TestWithoutTheStatusFinalizerAPodIsLabelledCompletedOnceItsNodeIsPersisted(t *testing.T) {
	e := newEnv(t, envOptions{noStatusFinalizer: true, script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(manifest(twoThenOne, "nofin"))
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	// As above: the cache empties on the patches' watch events, the counter follows their answers.
	harness.Until(t, "emptying the pod cache, every label counted", 30*time.Second, func(context.Context) bool {
		return e.Metric("wfguard_pods_cached", nil) == 0 && e.Metric("wfguard_pods_labelled_completed_total", nil) >= 3
	})
	for _, name := range []string{"nofin[0].a", "nofin[0].b", "nofin[1].c"} {
		if pod := e.PodOf(done, name); pod.Labels[common.LabelKeyCompleted] != "true" {
			t.Errorf("pod of %s: completed=%q, want true", name, pod.Labels[common.LabelKeyCompleted])
		}
	}
	if got := e.Metric("wfguard_pods_labelled_completed_total", nil); got != 3 {
		t.Errorf("wfguard_pods_labelled_completed_total = %v, want 3 (one label patch per pod)", got)
	}
	if got := e.Metric("wfguard_pod_finalizers_released_total", nil); got != 0 {
		t.Errorf("finalizers released = %v, want 0: no pod carried one", got)
	}
}

const gcWhileRunning = `
metadata: {name: %s}
spec:
  entrypoint: main
  podGC: {strategy: OnPodCompletion, deleteDelayDuration: "1s"}
  templates:
  - name: main
    steps:
    - - {name: first, template: quick}
    - - {name: second, template: held}
  - name: quick
    container: {image: alpine, command: ["true"]}
  - name: held
    container: {image: alpine, command: ["true"]}
`

func TestADelayedPodGCDeletesACompletedPodThatLeftTheCacheWhileItsWorkflowRuns(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"held": {Hold: hold}}}})
	wf := e.Submit(manifest(gcWhileRunning, "gcrun"))
	running := e.WaitFor(wf.Name, "running second", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "gcrun[1].second")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	first := e.PodOf(running, "gcrun[0].first")
	// first's pod was labelled completed (out of the cache) with its deletion time recorded; it goes when due
	// although second still runs.
	harness.Until(t, "podGC deleting first's pod", 30*time.Second, func(ctx context.Context) bool {
		_, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, first.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && e.Metric("wfguard_podgc_deleted_total", nil) == 1
	})
	if got := harness.NodeByName(e.stored(wf.Name), "gcrun[1].second"); got.Phase != wfv1.NodeRunning {
		t.Fatalf("second = %s, want still running when first's pod was collected", got.Phase)
	}
	close(hold)
	if done := e.WaitCompleted(wf.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	harness.Until(t, "podGC deleting second's pod", 30*time.Second, func(ctx context.Context) bool {
		return len(e.podNames(ctx)) == 0 && e.Metric("wfguard_podgc_deleted_total", nil) == 2
	})
	// The completed pods are read from the API server only when a delayed deletion is due: once per pod
	// here, not once per pass.
	if got := e.Metric("wfguard_podgc_completed_pod_reads_total", nil); got < 1 || got > 3 {
		t.Errorf("completed-pod reads = %v, want between 1 and 3 (one per due deletion, plus the first look)", got)
	}
}

// grantPodPatch lets user patch pods in the namespace (as a namespace editor may): the executor role does
// not, so a pod's own ServiceAccount cannot label itself.
func grantPodPatch(t *testing.T, e *env, user string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(e.Grant(cp.Config(), user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch", "get"}}))
}

const labelCompleted = `{"metadata":{"labels":{"workflows.argoproj.io/completed":"true"}}}`

func TestAPodsOwnServiceAccountCannotLabelItCompleted(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	harness.BindExecutorRole(t, cp.Config(), e.Namespace)
	wf := e.Submit(manifest(`
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`, "selfish"))
	running := e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "selfish")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	pod := e.PodOf(running, "selfish")
	self := kubernetes.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", nil))
	_, err := self.CoreV1().Pods(e.Namespace).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(labelCompleted), metav1.PatchOptions{})
	if err == nil {
		t.Fatal("the pod's ServiceAccount (the executor role) labelled its own pod completed; config/rbac must not allow it")
	}
}

func TestAPodLabelledCompletedByAnotherIdentityBeforeItsNodeEndsIsWatchedAgain(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, envOptions{script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
	wf := e.Submit(manifest(`
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`, "hidden"))
	running := e.WaitFor(wf.Name, "running", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "hidden")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	pod := e.PodOf(running, "hidden")
	mallory := grantPodPatch(t, e, "mallory")
	if _, err := mallory.CoreV1().Pods(e.Namespace).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(labelCompleted), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling the pod completed as mallory: %v", err)
	}
	// The pod left the cache; the controller reads it past the cache, sees its node is not final, and
	// labels it back so its changes reach the workflow again.
	events := e.WaitEvent("Workflow", wf.Name, controller.ReasonPodCompletedLabelRestored)
	if len(events) == 0 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("events = %v, want a Warning %s", events, controller.ReasonPodCompletedLabelRestored)
	}
	// The counter follows the patch's answer, which may reach the controller after its watch event.
	harness.Until(t, "the pod back in the cache, the restore counted", 30*time.Second, func(ctx context.Context) bool {
		return e.Metric("wfguard_pods_cached", nil) == 1 && e.Metric("wfguard_pod_completed_label_restored_total", nil) >= 1
	})
	restored, err := e.Kube.CoreV1().Pods(e.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restored.Labels[common.LabelKeyCompleted] != "false" || !slices.Contains(restored.Finalizers, common.FinalizerPodStatus) {
		t.Errorf("pod labels %v finalizers %v, want completed=false and the status finalizer kept", restored.Labels, restored.Finalizers)
	}
	if n := harness.NodeByName(e.stored(wf.Name), "hidden"); n.Phase != wfv1.NodeRunning {
		t.Errorf("node = %s %q, want still Running: hiding its pod must neither end nor lose it", n.Phase, n.Message)
	}
	// The pod's end reaches the controller through the cache again: the node succeeds only now.
	close(hold)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
	}
	// The release follows the write that completed the workflow.
	harness.Until(t, "releasing the pod and labelling it completed", 30*time.Second, func(ctx context.Context) bool {
		final, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && final.Labels[common.LabelKeyCompleted] == "true" && !slices.Contains(final.Finalizers, common.FinalizerPodStatus)
	})
	if n := harness.NodeByName(done, "hidden"); n.Phase != wfv1.NodeSucceeded {
		t.Errorf("node = %s %q, want Succeeded from the pod's own end", n.Phase, n.Message)
	}
}

// stored is the workflow as the API server has it now.
func (e *env) stored(name string) *wfv1.Workflow {
	e.t.Helper()
	wf, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading workflow %s: %v", name, err)
	}
	return wf
}

func TestAPodRelabelledByAnotherIdentityBeforeItsReleaseStillLosesTheFinalizer(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		patch    string
	}{
		{"a pod labelled completed before its release is released", labelCompleted},
		{"a pod whose workflow label is removed before its release is released", `{"metadata":{"labels":{"workflows.argoproj.io/workflow":null}}}`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			points := faultinject.NewPoints()
			e := newEnv(t, envOptions{points: points})
			// Every release fails until disarmed: the node's final state is persisted, the finalizer held.
			points.Fail(faultinject.PointBeforeFinalizerRelease, 0)
			wf := e.Submit(manifest(`
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`, "window"))
			if err := points.WaitHit(t.Context(), faultinject.PointBeforeFinalizerRelease, 1); err != nil {
				t.Fatal(err)
			}
			done := e.WaitCompleted(wf.Name)
			pod := e.PodOf(done, "window")
			if !slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
				t.Fatalf("finalizers = %v, want the status finalizer still held while releases fail", pod.Finalizers)
			}
			mallory := grantPodPatch(t, e, "mallory")
			if _, err := mallory.CoreV1().Pods(e.Namespace).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patching the pod as mallory: %v", err)
			}
			// The pod leaves the cache still holding the finalizer; the controller keeps it aside.
			harness.Until(t, "the pod out of the cache", 30*time.Second, func(ctx context.Context) bool {
				return e.Metric("wfguard_pods_cached", nil) == 0
			})
			points.Disarm(faultinject.PointBeforeFinalizerRelease)
			// The counter follows the PATCH's answer, which may reach the controller after the test sees its effect.
			harness.Until(t, "the status finalizer released and counted", 30*time.Second, func(ctx context.Context) bool {
				final, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				return err == nil && !slices.Contains(final.Finalizers, common.FinalizerPodStatus) &&
					e.Metric("wfguard_departed_pod_finalizers_released_total", nil) >= 1
			})
			if got := e.Metric("wfguard_departed_pod_finalizers_released_total", nil); got != 1 {
				t.Errorf("departed pods released = %v, want 1", got)
			}
		})
	}
}
