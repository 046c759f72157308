package harness

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// ReleaseOrder records, from watches on the workflows and pods of a namespace, the first workflow
// revision that showed each node fulfilled and the pod revision at which the node's pod lost the status
// finalizer it had held. resourceVersions are etcd revisions, so they order writes across resources: a
// release before the fulfilled revision breaks I5.
type ReleaseOrder struct {
	mu        sync.Mutex
	fulfilled map[string]int64 // node ID → first workflow revision showing it fulfilled
	released  map[string]int64 // node ID → pod revision where it lost the finalizer
	stop      func()
}

// WatchReleaseOrder starts recording the namespace of w until Stop or the end of the test.
func WatchReleaseOrder(w *Workflows) *ReleaseOrder {
	w.T.Helper()
	ctx := w.T.Context()
	wfWatch, err := w.Argo.ArgoprojV1alpha1().Workflows(w.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		w.T.Fatalf("watching the workflows of %s: %v", w.Namespace, err)
	}
	podWatch, err := w.Kube.CoreV1().Pods(w.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		wfWatch.Stop()
		w.T.Fatalf("watching the pods of %s: %v", w.Namespace, err)
	}
	r := &ReleaseOrder{fulfilled: map[string]int64{}, released: map[string]int64{}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.recordFulfilled(wfWatch.ResultChan())
	}()
	go func() {
		defer wg.Done()
		r.recordReleased(podWatch.ResultChan())
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			wfWatch.Stop()
			podWatch.Stop()
			wg.Wait()
		})
	}
	w.T.Cleanup(r.stop)
	return r
}

func (r *ReleaseOrder) recordFulfilled(events <-chan watch.Event) {
	for ev := range events {
		wf, ok := ev.Object.(*wfv1.Workflow)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		rv, _ := strconv.ParseInt(wf.ResourceVersion, 10, 64)
		r.mu.Lock()
		for id, n := range wf.Status.Nodes {
			if _, seen := r.fulfilled[id]; !seen && n.Fulfilled() {
				r.fulfilled[id] = rv
			}
		}
		r.mu.Unlock()
	}
}

func (r *ReleaseOrder) recordReleased(events <-chan watch.Event) {
	had := map[string]bool{} // pod name → it held the finalizer once
	for ev := range events {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		id := pod.Annotations[common.AnnotationKeyNodeID]
		has := slices.Contains(pod.Finalizers, common.FinalizerPodStatus)
		r.mu.Lock()
		if _, done := r.released[id]; !done && had[pod.Name] && !has {
			r.released[id], _ = strconv.ParseInt(pod.ResourceVersion, 10, 64)
		}
		had[pod.Name] = had[pod.Name] || has
		r.mu.Unlock()
	}
}

// Stop ends the watches; it may be called more than once.
func (r *ReleaseOrder) Stop() { r.stop() }

// ReleasedCount is how many nodes' pods have lost the finalizer so far.
func (r *ReleaseOrder) ReleasedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.released)
}

// Revisions are copies of what was recorded: node ID → release revision, node ID → fulfilled revision.
func (r *ReleaseOrder) Revisions() (released, fulfilled map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.released), maps.Clone(r.fulfilled)
}

// WaitReleased waits up to timeout until the pod of node id lost the finalizer and returns that revision
// and the node's fulfilled one; 0 is "not seen" for either, which the caller reports.
func (r *ReleaseOrder) WaitReleased(ctx context.Context, id string, timeout time.Duration) (released, fulfilled int64) {
	_ = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.released[id]
		return ok, nil
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released[id], r.fulfilled[id]
}
