package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wfguard/wfguard/podfinalizer"
)

// OrphansResult compares wfguard releasing the finalizers of pods whose workflow is gone with a raw
// patch loop of the same concurrency.
type OrphansResult struct {
	Pods int `json:"pods"`
	// ControllerSeconds runs from controller start (cache sync included) to the last release seen.
	ControllerSeconds float64 `json:"controllerSeconds"`
	// RawSeconds runs from a LIST of the pods to the last patch answered.
	RawSeconds float64 `json:"rawSeconds"`
	Ratio      float64 `json:"ratio"` // controller ÷ raw
}

// rawReleaseConcurrency matches the controller's own bound on concurrent releases.
const rawReleaseConcurrency = 16

// orphans measures wfguard alone: its sweep of pods whose workflow is gone has no counterpart measured
// in argo here.
func (e *env) orphans(ctx context.Context, report *Report) error {
	if !e.runs(ControllerWFGuard) {
		return nil
	}
	k := e.opts.OrphanPods
	res := &OrphansResult{Pods: k}

	ns, err := e.namespace(ctx, "bench-orphans")
	if err != nil {
		return err
	}
	if err := e.createOrphans(ctx, ns, k); err != nil {
		return err
	}
	released, stop, err := watchReleases(ctx, e, ns)
	if err != nil {
		return err
	}
	defer stop()
	begin := time.Now()
	p, err := e.startController(ctx, ControllerWFGuard, ns, processOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = p.stop() }()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := released.wait(waitCtx, k); err != nil {
		return p.failed(err)
	}
	res.ControllerSeconds = time.Since(begin).Seconds()

	rawNS, err := e.namespace(ctx, "bench-orphans-raw")
	if err != nil {
		return err
	}
	if err := e.createOrphans(ctx, rawNS, k); err != nil {
		return err
	}
	begin = time.Now()
	if err := e.rawRelease(ctx, rawNS); err != nil {
		return err
	}
	res.RawSeconds = time.Since(begin).Seconds()
	if res.RawSeconds > 0 {
		res.Ratio = res.ControllerSeconds / res.RawSeconds
	}
	report.Orphans = res
	return nil
}

// createOrphans creates k pods holding the status finalizer whose owning workflow no longer exists.
func (e *env) createOrphans(ctx context.Context, ns string, k int) error {
	gone := types.UID("00000000-0000-0000-0000-00000000dead")
	return inParallel(16, k, func(i int) error {
		_, err := e.kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			// Named and annotated as the controller names a node's pod (podidentity): only such pods are released.
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gone-%d", 1000000+i), Finalizers: []string{podfinalizer.Finalizer},
				Labels:          map[string]string{common.LabelKeyWorkflow: "gone"},
				Annotations:     map[string]string{common.AnnotationKeyNodeID: fmt.Sprintf("gone-%d", 1000000+i)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "gone", UID: gone}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating orphan pod %d: %w", i, err)
		}
		return nil
	})
}

// rawRelease lists the pods and removes the finalizer from each with one patch, at the controller's
// concurrency: the control plane's own limit for the same releases.
func (e *env) rawRelease(ctx context.Context, ns string) error {
	pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing orphans: %w", err)
	}
	return inParallel(rawReleaseConcurrency, len(pods.Items), func(i int) error {
		p := &pods.Items[i]
		return removeFinalizer(ctx, e.kube, ns, p.Name, p.UID)
	})
}

// releases counts pods of a namespace seen without the status finalizer, from a watch.
type releases struct {
	mu      sync.Mutex
	seen    map[string]bool
	changed chan struct{}
}

func watchReleases(ctx context.Context, e *env, ns string) (*releases, func(), error) {
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, nil, fmt.Errorf("watching pods in %s: %w", ns, err)
	}
	r := &releases{seen: map[string]bool{}, changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
				continue
			}
			r.mu.Lock()
			if !r.seen[pod.Name] {
				r.seen[pod.Name] = true
				close(r.changed)
				r.changed = make(chan struct{})
			}
			r.mu.Unlock()
		}
	}()
	return r, func() { w.Stop(); <-done }, nil
}

func (r *releases) wait(ctx context.Context, n int) error {
	for {
		r.mu.Lock()
		have, changed := len(r.seen), r.changed
		r.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d releases (seen %d): %w", n, have, ctx.Err())
		}
	}
}
