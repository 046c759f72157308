package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
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

// rawReleaseConcurrency is the controller's own bound on concurrent releases.
const rawReleaseConcurrency = podfinalizer.ReleaseParallelism

// orphans measures wfguard alone: its sweep of pods whose workflow is gone has no counterpart measured
// in argo here.
func (e *env) orphans(ctx context.Context, report *Report) error {
	if !e.runs(ControllerWFGuard) {
		return nil
	}
	k, n := e.opts.OrphanPods, max(e.opts.OrphanRounds, 1)
	var rounds []OrphansRound
	for r := range n {
		var round OrphansRound
		sides := roundOrder([]orphanSide{sideController, sideRaw}, r)
		round.ControllerFirst = sides[0] == sideController
		e.opts.progressf("bench:   round %d of %d (%s first)", r+1, n, sides[0])
		for _, side := range sides {
			seconds, err := e.sweep(ctx, side, k)
			if err != nil {
				return fmt.Errorf("orphan round %d of %d, %s: %w", r+1, n, side, err)
			}
			if side == sideController {
				round.ControllerSeconds = seconds
			} else {
				round.RawSeconds = seconds
			}
		}
		if round.RawSeconds > 0 {
			round.Ratio = round.ControllerSeconds / round.RawSeconds
		}
		rounds = append(rounds, round)
	}
	report.Orphans = newOrphansResult(k, rounds)
	return nil
}

// orphanSide is who releases a round's orphans.
type orphanSide string

const (
	sideController orphanSide = "controller"
	sideRaw        orphanSide = "raw loop"
)

// namespacePrefix names the namespaces of side's orphans.
func (s orphanSide) namespacePrefix() string {
	if s == sideRaw {
		return "bench-orphans-raw"
	}
	return "bench-orphans"
}

// sweep times side releasing k fresh orphans, then deletes them: released orphans left behind would load
// the API server's watch cache through every later round and scenario.
func (e *env) sweep(ctx context.Context, side orphanSide, k int) (float64, error) {
	ns, err := e.namespace(ctx, side.namespacePrefix())
	if err != nil {
		return 0, err
	}
	if err := e.createOrphans(ctx, ns, k); err != nil {
		return 0, err
	}
	var seconds float64
	if side == sideRaw {
		seconds, err = e.rawSweep(ctx, ns)
	} else {
		seconds, err = e.controllerSweep(ctx, ns, k)
	}
	if err != nil {
		return 0, err
	}
	if err := e.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return 0, fmt.Errorf("deleting the released orphans of %s: %w", ns, err)
	}
	return seconds, nil
}

// newOrphansResult is the scenario's result from its rounds: the median round's figures, every round kept.
func newOrphansResult(pods int, rounds []OrphansRound) *OrphansResult {
	median := medianOrphansRound(rounds)
	return &OrphansResult{Pods: pods, Rounds: rounds, ControllerSeconds: median.ControllerSeconds, RawSeconds: median.RawSeconds, Ratio: median.Ratio}
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

// controllerSweep starts wfguard on the k orphans of ns and times it until every release is seen.
func (e *env) controllerSweep(ctx context.Context, ns string, k int) (float64, error) {
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

// rawSweep times the raw patch loop on the orphans of ns, through a proxy of its own as the controller's
// every call goes through one.
func (e *env) rawSweep(ctx context.Context, ns string) (float64, error) {
	_, kubeConfig, closeProxy, err := e.rawClientThroughProxy(ns, newCallCounter())
	if err != nil {
		return 0, err
	}
	defer closeProxy()
	begin := time.Now()
	if err := rawRelease(ctx, kubernetes.NewForConfigOrDie(kubeConfig), ns); err != nil {
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
