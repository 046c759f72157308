package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/podfinalizer"
)

// OrphansResult compares wfguard releasing the finalizers of pods whose workflow is gone with a raw
// patch loop of the same concurrency, over rounds that alternate which side runs first.
type OrphansResult struct {
	Pods int `json:"pods"`
	// ControllerSeconds, RawSeconds and Ratio are the median round's (by ratio): one round caught by a
	// passing stall of the shared control plane (seen once as 1.68× against 1.13× around it) does not
	// decide the verdict, and every round is kept in Rounds.
	ControllerSeconds float64        `json:"controllerSeconds"`
	RawSeconds        float64        `json:"rawSeconds"`
	Ratio             float64        `json:"ratio"` // controller ÷ raw
	Rounds            []OrphansRound `json:"rounds"`
}

// OrphansRound is one controller sweep and one raw loop over pods of their own.
type OrphansRound struct {
	// ControllerSeconds runs from controller start (cache sync included) to the last release seen.
	ControllerSeconds float64 `json:"controllerSeconds"`
	// RawSeconds runs from a LIST of the pods to the last patch answered.
	RawSeconds      float64 `json:"rawSeconds"`
	Ratio           float64 `json:"ratio"`
	ControllerFirst bool    `json:"controllerFirst"`
}

// rawReleaseConcurrency matches the controller's own bound on concurrent releases.
const rawReleaseConcurrency = 16

// orphans measures wfguard alone: its sweep of pods whose workflow is gone has no counterpart measured
// in argo here.
func (e *env) orphans(ctx context.Context, report *Report) error {
	if !e.runs(ControllerWFGuard) {
		return nil
	}
	res := &OrphansResult{Pods: e.opts.OrphanPods}
	for r := range max(e.opts.OrphanRounds, 1) {
		round := OrphansRound{ControllerFirst: r%2 == 0}
		e.opts.progressf("bench:   round %d of %d (%s first)", r+1, max(e.opts.OrphanRounds, 1), map[bool]string{true: "controller", false: "raw loop"}[round.ControllerFirst])
		sides := []func() error{
			func() (err error) { round.ControllerSeconds, err = e.controllerSweep(ctx, res.Pods); return err },
			func() (err error) { round.RawSeconds, err = e.rawSweep(ctx, res.Pods); return err },
		}
		if !round.ControllerFirst {
			slices.Reverse(sides)
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
		if round.RawSeconds > 0 {
			round.Ratio = round.ControllerSeconds / round.RawSeconds
		}
		res.Rounds = append(res.Rounds, round)
	}
	median := medianOrphansRound(res.Rounds)
	res.ControllerSeconds, res.RawSeconds, res.Ratio = median.ControllerSeconds, median.RawSeconds, median.Ratio
	report.Orphans = res
	return nil
}

// medianOrphansRound is the round of median ratio (of an even count, the lower middle one).
func medianOrphansRound(rounds []OrphansRound) OrphansRound {
	if len(rounds) == 0 {
		return OrphansRound{}
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b OrphansRound) int { return cmp.Compare(a.Ratio, b.Ratio) })
	return sorted[(len(sorted)-1)/2]
}

// writeText prints the median round and every round's ratio.
func (o *OrphansResult) writeText(w io.Writer) {
	ratios := make([]string, len(o.Rounds))
	for i, r := range o.Rounds {
		ratios[i] = fmt.Sprintf("%.2f×", r.Ratio)
	}
	fmt.Fprintf(w, "orphan sweep (wfguard): %d pods — controller %.2f s, raw patch loop %.2f s, ratio %.2f× (median round; rounds %s)\n\n",
		o.Pods, o.ControllerSeconds, o.RawSeconds, o.Ratio, strings.Join(ratios, ", "))
}

// controllerSweep starts wfguard on k fresh orphans and times it until every release is seen.
func (e *env) controllerSweep(ctx context.Context, k int) (float64, error) {
	ns, err := e.namespace(ctx, "bench-orphans")
	if err != nil {
		return 0, err
	}
	if err := e.createOrphans(ctx, ns, k); err != nil {
		return 0, err
	}
	released, stop, err := watchReleases(ctx, e, ns)
	if err != nil {
		return 0, err
	}
	defer stop()
	begin := time.Now()
	p, err := e.startController(ctx, ControllerWFGuard, ns, processOptions{})
	if err != nil {
		return 0, err
	}
	defer func() { _ = p.stop() }()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := released.wait(waitCtx, k); err != nil {
		return 0, p.failed(err)
	}
	return time.Since(begin).Seconds(), nil
}

// rawSweep times the raw patch loop on k fresh orphans.
func (e *env) rawSweep(ctx context.Context, k int) (float64, error) {
	ns, err := e.namespace(ctx, "bench-orphans-raw")
	if err != nil {
		return 0, err
	}
	if err := e.createOrphans(ctx, ns, k); err != nil {
		return 0, err
	}
	// Through a proxy of its own with the controller's QPS and burst, as the throughput scenario's raw
	// clients: the controller's every call pays that hop through the bench process, so the loop's must too.
	proxy, err := startProxy(e.config, newCallCounter(), proxyOptions{LogPath: filepath.Join(e.tmp, ns+"-raw-proxy.log")})
	if err != nil {
		return 0, err
	}
	defer proxy.close()
	kube := kubernetes.NewForConfigOrDie(controller.KubeClientConfig(&rest.Config{Host: proxy.URL(), QPS: float32(e.opts.QPS), Burst: e.opts.Burst}, ""))
	begin := time.Now()
	if err := rawRelease(ctx, kube, ns); err != nil {
		return 0, err
	}
	return time.Since(begin).Seconds(), nil
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
func rawRelease(ctx context.Context, kube kubernetes.Interface, ns string) error {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing orphans: %w", err)
	}
	return inParallel(rawReleaseConcurrency, len(pods.Items), func(i int) error {
		p := &pods.Items[i]
		return removeFinalizer(ctx, kube, ns, p.Name, p.UID)
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
