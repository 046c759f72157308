package podfinalizer_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// The controller-manager's garbage collector deletes the pods of deleted workflows, as in a cluster.
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{ControllerManager: true},
		func(c *controlplane.ControlPlane) { cp = c }))
}

// startController runs a controller over all namespaces until the test ends or its Stop.
func startController(t *testing.T, statusFinalizer bool, sweep time.Duration) *harness.Controller {
	t.Helper()
	argo := versioned.NewForConfigOrDie(cp.Config())
	return harness.StartController(t, cp.Config(), controller.Options{Workers: 8, StatusFinalizer: statusFinalizer,
		OrphanSweepInterval: sweep, Validate: controller.ArgoValidator(argo), Logger: slog.New(slog.DiscardHandler)})
}

func startNode(t *testing.T, ns string, script simnode.Script) {
	t.Helper()
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns, Script: script})
}

func namespace(t *testing.T) string {
	t.Helper()
	return harness.Namespace(t, cp.Config(), "fin")
}

func podsIn(ctx context.Context, ns string) []corev1.Pod {
	list, err := kubernetes.NewForConfigOrDie(cp.Config()).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return list.Items
}

func holding(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if slices.Contains(p.Finalizers, common.FinalizerPodStatus) {
			n++
		}
	}
	return n
}

const threeSteps = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: t}, {name: b, template: t}], [{name: c, template: t}]]
  - name: t
    container: {image: alpine, command: ["true"]}
`

func TestAPodLosesItsFinalizerOnlyAfterItsNodesFinalStateIsPersisted(t *testing.T) {
	ns := namespace(t)
	startController(t, true, time.Minute)
	startNode(t, ns, simnode.Script{Default: simnode.Behavior{Jitter: 0.5, RunFor: 50 * time.Millisecond}})
	workflows := harness.NewWorkflows(t, cp.Config(), ns)
	order := harness.WatchReleaseOrder(workflows)
	wf := workflows.Submit(fmt.Sprintf(threeSteps, "ordered"))
	harness.Until(t, "all three pods released", time.Minute, func(context.Context) bool { return order.ReleasedCount() == 3 })
	order.Stop()
	releasedAt, fulfilledAt := order.Revisions()
	for id, rel := range releasedAt {
		if ful, ok := fulfilledAt[id]; !ok || ful >= rel {
			t.Errorf("I5: node %s's pod lost its finalizer at revision %d, before its final state was persisted (revision %d, seen %v)", id, rel, ful, ok)
		}
	}
	if got := holding(podsIn(t.Context(), ns)); got != 0 {
		t.Errorf("%d pods of %s still hold the finalizer", got, wf.Name)
	}
	workflows.WaitEvent("", wf.Name, podfinalizer.ReasonFinalizersReleased)
}

func TestDeletingARunningWorkflowReleasesAllItsPods(t *testing.T) {
	ns := namespace(t)
	startController(t, true, time.Minute)
	hold := make(chan struct{})
	defer close(hold)
	startNode(t, ns, simnode.Script{Default: simnode.Behavior{Hold: hold}})
	wf := harness.NewWorkflows(t, cp.Config(), ns).Submit(fmt.Sprintf(threeSteps, "doomed"))
	harness.Until(t, "two pods running with the finalizer", time.Minute, func(ctx context.Context) bool {
		return holding(podsIn(ctx, ns)) == 2
	})
	if err := versioned.NewForConfigOrDie(cp.Config()).ArgoprojV1alpha1().Workflows(ns).Delete(t.Context(), wf.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The test deletes the pods as the garbage collector would: how soon the real one gets to them depends
	// on how much garbage earlier tests left it (thousands of pods), which is not what is tested here.
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	for _, pod := range podsIn(t.Context(), ns) {
		if err := kube.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	harness.Until(t, "every pod of the deleted workflow released and removed (none stuck Terminating)", time.Minute, func(ctx context.Context) bool {
		return len(podsIn(ctx, ns)) == 0
	})
}

func TestPodsOfAWorkflowDeletedWithOrphanPropagationAreReleased(t *testing.T) {
	// kubectl delete --cascade=orphan: the garbage collector strips the pods' ownerReferences and leaves
	// them; only the controller can take its finalizer off, or they could never be deleted.
	ns := namespace(t)
	startController(t, true, time.Minute)
	hold := make(chan struct{})
	defer close(hold)
	startNode(t, ns, simnode.Script{Default: simnode.Behavior{Hold: hold}})
	wf := harness.NewWorkflows(t, cp.Config(), ns).Submit(fmt.Sprintf(threeSteps, "orphaned"))
	harness.Until(t, "two pods running with the finalizer", time.Minute, func(ctx context.Context) bool {
		return holding(podsIn(ctx, ns)) == 2
	})
	orphan := metav1.DeletePropagationOrphan
	if err := versioned.NewForConfigOrDie(cp.Config()).ArgoprojV1alpha1().Workflows(ns).Delete(t.Context(), wf.Name,
		metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	// Nothing else will ever delete them, so they are labelled completed too: that takes them out of the
	// controller's pod cache.
	harness.Until(t, "both pods left without an owner, without the status finalizer, and labelled completed", time.Minute, func(ctx context.Context) bool {
		pods := podsIn(ctx, ns)
		for _, p := range pods {
			if len(p.OwnerReferences) > 0 || !podfinalizer.IsCompleted(&p) {
				return false
			}
		}
		return len(pods) == 2 && holding(pods) == 0
	})
}

func TestPodsOfAWorkflowDeletedWhileTheControllerWasDownAreReleasedAfterRestart(t *testing.T) {
	nsA, nsB := namespace(t), namespace(t)
	first := startController(t, true, time.Minute)
	hold := make(chan struct{})
	defer close(hold)
	startNode(t, nsA, simnode.Script{Default: simnode.Behavior{Hold: hold}})
	startNode(t, nsB, simnode.Script{Default: simnode.Behavior{Hold: hold}})
	argo := versioned.NewForConfigOrDie(cp.Config())
	old := harness.NewWorkflows(t, cp.Config(), nsA).Submit(fmt.Sprintf(threeSteps, "same-name"))
	other := harness.NewWorkflows(t, cp.Config(), nsB).Submit(fmt.Sprintf(threeSteps, "same-name"))
	harness.Until(t, "both workflows' first pods hold the finalizer", time.Minute, func(ctx context.Context) bool {
		return holding(podsIn(ctx, nsA)) == 2 && holding(podsIn(ctx, nsB)) == 2
	})
	first.Stop()
	// While the controller is down: the workflow in A is deleted (its pods go Terminating, held), and a new
	// workflow of the same name is created in A, with pods of its own holding the finalizer.
	if err := argo.ArgoprojV1alpha1().Workflows(nsA).Delete(t.Context(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The test deletes the old workflow's pods as the garbage collector would (see
	// TestDeletingARunningWorkflowReleasesAllItsPods: the real one may still be busy with earlier tests' garbage).
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	for _, pod := range podsIn(t.Context(), nsA) {
		if err := kube.CoreV1().Pods(nsA).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	harness.Until(t, "the old workflow gone and its pods terminating", time.Minute, func(ctx context.Context) bool {
		_, err := argo.ArgoprojV1alpha1().Workflows(nsA).Get(ctx, old.Name, metav1.GetOptions{})
		pods := podsIn(ctx, nsA)
		terminating := 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		return err != nil && terminating == 2
	})
	renewed := harness.NewWorkflows(t, cp.Config(), nsA).Submit(fmt.Sprintf(threeSteps, "same-name"))
	newPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "same-name-new", Finalizers: []string{common.FinalizerPodStatus},
			Labels:          map[string]string{common.LabelKeyWorkflow: "same-name"},
			Annotations:     map[string]string{common.AnnotationKeyNodeID: renewed.NodeID("same-name[9].x")},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(renewed, wfv1.SchemeGroupVersion.WithKind("Workflow"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if _, err := kube.CoreV1().Pods(nsA).Create(t.Context(), newPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	startController(t, true, time.Minute)
	harness.Until(t, "the deleted workflow's pods released and gone", time.Minute, func(ctx context.Context) bool {
		for _, p := range podsIn(ctx, nsA) {
			if p.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	})
	// The same-named workflow in another namespace and the new one in A keep theirs (identity is by UID).
	if got := holding(podsIn(t.Context(), nsB)); got != 2 {
		t.Errorf("pods of %s/%s holding the finalizer = %d, want 2 (untouched)", nsB, other.Name, got)
	}
	pod, err := kube.CoreV1().Pods(nsA).Get(t.Context(), newPod.Name, metav1.GetOptions{})
	if err != nil || !slices.Contains(pod.Finalizers, common.FinalizerPodStatus) {
		t.Errorf("the new same-named workflow's pod lost its finalizer (err %v)", err)
	}
}

func TestTurningTheFinalizerFlagOffStillReleasesPodsThatCarryIt(t *testing.T) {
	ns := namespace(t)
	first := startController(t, true, time.Minute)
	release := make(chan struct{})
	startNode(t, ns, simnode.Script{Default: simnode.Behavior{Hold: release}})
	wf := harness.NewWorkflows(t, cp.Config(), ns).Submit(fmt.Sprintf(threeSteps, "flag-off"))
	harness.Until(t, "two pods hold the finalizer", time.Minute, func(ctx context.Context) bool { return holding(podsIn(ctx, ns)) == 2 })
	first.Stop()
	startController(t, false, time.Minute)
	close(release)
	argo := versioned.NewForConfigOrDie(cp.Config())
	harness.Until(t, "the workflow completed", time.Minute, func(ctx context.Context) bool {
		got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(ctx, wf.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase.Completed()
	})
	harness.Until(t, "every pod released", 30*time.Second, func(ctx context.Context) bool { return holding(podsIn(ctx, ns)) == 0 })
	pods := podsIn(t.Context(), ns)
	if len(pods) != 3 {
		t.Errorf("want 3 pods, got %d", len(pods))
	}
	for _, p := range pods {
		if p.Name != "" && p.Labels[common.LabelKeyWorkflow] == wf.Name && p.Annotations[common.AnnotationKeyNodeName] == "flag-off[1].c" &&
			slices.Contains(p.Finalizers, common.FinalizerPodStatus) {
			t.Errorf("a pod created with the flag off got the finalizer")
		}
	}
}

func TestThousandsOfOrphanedPodsAreAllReleased(t *testing.T) {
	ns := namespace(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	const n = 2000
	gone := types.UID("99999999-0000-0000-0000-000000000000")
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, err := kube.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
					// Named and annotated as the controller names a node's pod: only such pods are ever released (podidentity).
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gone-%d", 1000000+i), Finalizers: []string{common.FinalizerPodStatus, "example.com/theirs"},
						Labels:          map[string]string{common.LabelKeyWorkflow: "gone"},
						Annotations:     map[string]string{common.AnnotationKeyNodeID: fmt.Sprintf("gone-%d", 1000000+i)},
						OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "gone", UID: gone}}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("created %d orphaned pods in %s", n, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	startController(t, true, time.Minute)
	harness.Until(t, "every orphan released", 3*time.Minute, func(ctx context.Context) bool { return holding(podsIn(ctx, ns)) == 0 })
	t.Logf("released %d orphaned pods in %s (including cache sync)", n, time.Since(begin).Round(time.Millisecond))
	for _, p := range podsIn(t.Context(), ns) {
		if !slices.Contains(p.Finalizers, "example.com/theirs") {
			t.Fatalf("pod %s lost a finalizer that is not ours: %v", p.Name, p.Finalizers)
		}
	}
}
