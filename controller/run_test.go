package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/synchronization"
)

func TestRunRefusesToStartWithoutTheCRDsItNeeds(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		crds     []runtime.Object
		want     string
	}{
		{"without the Workflow CRD, saying how to install it", nil,
			"the workflows.argoproj.io CRD is not installed: kubectl apply -k config/crd"},
		{"without the WorkflowAction CRD", []runtime.Object{crd("workflows.argoproj.io")},
			"the workflowactions.argoproj.io CRD is not installed: kubectl apply -k config/crd"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			f := newFixture(t, Options{}, tc.crds...)
			if err := f.c.Run(t.Context()); err == nil || err.Error() != tc.want {
				t.Errorf("Run = %v, want %q", err, tc.want)
			}
			if f.c.Ready() || !f.c.Started() {
				t.Errorf("ready %v, started %v: want started, never ready", f.c.Ready(), f.c.Started())
			}
		})
	}
}

// Run fills its caches from the API, gives back the running workflows' locks before any worker takes a
// key, serves, and drains its queue once its context ends.
func TestRunStartsFromWhatTheAPIHoldsAndDrainsWhenItsContextEnds(t *testing.T) {
	// The fakes cannot stream a list: with client-go's WatchListClient on, its default, no informer would sync.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	points := faultinject.NewPoints()
	points.Pause(faultinject.PointWorker) // what Run restored is seen before any pass changes it
	holder := holding(t, "holder", wfv1.WorkflowRunning, false)
	pod := podOf(running(), podNode("step", wfv1.NodeRunning, t0), corev1.PodRunning)
	_, suspend := pendingAction(t, "suspend", actionsv1.ActionSuspend, t0)
	f := newFixture(t, Options{Points: points, Workers: 2},
		crd("workflows.argoproj.io"), crd("workflowactions.argoproj.io"), holder, pod, suspend)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- f.c.Run(ctx) }()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return f.c.Ready(), nil
	}); err != nil {
		t.Fatalf("the controller never became ready: %v", err)
	}

	for name, cached := range map[string]bool{
		"workflow ns/holder": inCache(f.c.inf.workflows.GetIndexer(), "ns/holder"),
		"pod " + pod.Name:    inCache(f.c.inf.pods.GetIndexer(), "ns/"+pod.Name),
		"action ns/suspend":  inCache(f.c.inf.actions.GetIndexer(), "ns/suspend"),
	} {
		if !cached {
			t.Errorf("%s is not in the cache", name)
		}
	}
	locks, err := synchronization.Locks(&wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "m"}}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var st *wfv1.SynchronizationStatus
	if taken, _, _, _ := f.c.locks.TryAcquire(&st, synchronization.Request{Holder: "ns/newcomer", Locks: locks}); taken {
		t.Error("a newcomer took the mutex the running workflow holds")
	}

	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run = %v, want a clean stop", err)
	}
	if f.c.Ready() {
		t.Error("still ready after Run returned")
	}
	if !strings.Contains(strings.Join(calls(f.dynamic), ","), "update workflows holder") {
		t.Errorf("the queued key was not reconciled before Run returned: calls %q", calls(f.dynamic))
	}
}

func inCache(store cache.Store, key string) bool {
	_, ok, _ := store.GetByKey(key)
	return ok
}

// crd is the CRD named name, its status schema keeping every field (as config/crd's do).
func crd(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"versions": []any{map[string]any{"name": "v1alpha1", "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"properties": map[string]any{"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}}}
}
