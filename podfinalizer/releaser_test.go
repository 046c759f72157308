package podfinalizer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/internal/fanout/fanouttest"
	"github.com/wfguard/wfguard/podidentity"
)

const (
	byWorkflowKey = "workflowKey"
	byWorkflowUID = "workflowUID"
)

// fixture is a Releaser over a fake API server whose pod and workflow caches hold what the test puts there.
type fixture struct {
	kube      *fake.Clientset
	workflows cache.Indexer
	recorder  *record.FakeRecorder
	enqueued  []string
	r         *Releaser
}

func newFixture(t *testing.T, cfg Config, pods ...*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{kube: fake.NewSimpleClientset(), recorder: record.NewFakeRecorder(10)}
	podCache := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		byWorkflowKey: func(obj any) ([]string, error) {
			pod := obj.(*corev1.Pod)
			return []string{pod.Namespace + "/" + pod.Labels[common.LabelKeyWorkflow]}, nil
		},
		byWorkflowUID: func(obj any) ([]string, error) {
			var uids []string
			for _, ref := range obj.(*corev1.Pod).OwnerReferences {
				uids = append(uids, string(ref.UID))
			}
			return uids, nil
		},
	})
	for _, pod := range pods {
		if err := podCache.Add(pod); err != nil {
			t.Fatal(err)
		}
		// The server's copy is newer than the cached one (the kubelet wrote its status since).
		stored := pod.DeepCopy()
		stored.ResourceVersion = "5"
		if err := f.kube.Tracker().Add(stored); err != nil {
			t.Fatal(err)
		}
	}
	f.workflows = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		byWorkflowUID: func(obj any) ([]string, error) { return []string{string(obj.(*wfv1.Workflow).UID)}, nil },
	})
	cfg.Kube = f.kube
	cfg.Pods, cfg.PodsByWorkflowKey, cfg.PodsByWorkflowUID = podCache, byWorkflowKey, byWorkflowUID
	cfg.Workflows, cfg.WorkflowsByUID = f.workflows, byWorkflowUID
	if cfg.Ours == nil {
		cfg.Ours = func(podidentity.Owner, *corev1.Pod) bool { return true }
	}
	cfg.Enqueue = func(pod *corev1.Pod) { f.enqueued = append(f.enqueued, pod.Name) }
	if cfg.Clock == nil {
		cfg.Clock = testingclock.NewFakePassiveClock(time.Now())
	}
	cfg.Log, cfg.Recorder, cfg.Registry = slog.New(slog.DiscardHandler), f.recorder, prometheus.NewRegistry()
	var err error
	if f.r, err = NewReleaser(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// pod is a cached pod of workflow wf (owner UID uid) for node id, holding our finalizer.
func pod(name, wf string, uid types.UID, id string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("pod-" + name), ResourceVersion: "1",
		Labels:          map[string]string{common.LabelKeyWorkflow: wf},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: id},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: wf, UID: uid}},
		Finalizers:      []string{Finalizer},
	}}
}

// holding returns the pods on the server that still hold our finalizer.
func (f *fixture) holding(t *testing.T) []string {
	t.Helper()
	list, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if slices.Contains(p.Finalizers, Finalizer) {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fixture) patches() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestPersistedPodsAreReleasedOnceAndNotPatchedAgainWhileTheCacheLags(t *testing.T) {
	tr := true
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "u1"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{
			"done":    {Phase: wfv1.NodeSucceeded, TaskResultSynced: &tr, FinishedAt: metav1.NewTime(time.Now().Add(-time.Second))},
			"running": {Phase: wfv1.NodeRunning},
		}}}
	cached := map[string]*corev1.Pod{"done": pod("done", "wf", "u1", "done"), "running": pod("running", "wf", "u1", "running")}
	f := newFixture(t, Config{StatusFinalizer: true}, cached["done"], cached["running"])

	if _, err := f.r.ReleasePersisted(context.Background(), wf, cached); err != nil {
		t.Fatal(err)
	}
	if got := f.holding(t); !slices.Equal(got, []string{"running"}) {
		t.Errorf("pods holding the finalizer = %v, want only the running one", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(releasePersisted)); got != 1 {
		t.Errorf("released{persisted} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.releasedBeforePersist); got != 0 {
		t.Errorf("released before persist = %v, want 0", got)
	}
	select {
	case e := <-f.recorder.Events:
		if !strings.Contains(e, ReasonFinalizersReleased) || !strings.Contains(e, "finalizer of 1 pods") {
			t.Errorf("event = %q, want %s for 1 pod", e, ReasonFinalizersReleased)
		}
	default:
		t.Error("no Event on the workflow")
	}

	// The next pass still sees the cached copy with the finalizer: the expectation spares the PATCH.
	before := f.patches()
	if _, err := f.r.ReleasePersisted(context.Background(), wf, cached); err != nil {
		t.Fatal(err)
	}
	if f.patches() != before {
		t.Error("a pass over a cache that has not caught up patched the released pod again")
	}
	// Once the cache shows the release, nothing is expected any more.
	released, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "done", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.r.PodUpdated(released)
	if f.r.expectations.Pending(cached["done"]) {
		t.Error("the expectation outlived the update that showed the release")
	}
}

func TestOnlyTheControllersPodsOfAWorkflowUIDThatIsGoneAreOrphans(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	old := pod("old", "wf", "gone", "wf-1")
	old.CreationTimestamp = metav1.NewTime(clk.Now().Add(-2 * time.Hour))
	current := pod("current", "wf", "live", "wf-2")
	intruder := pod("intruder", "wf", "gone", "wf-3")
	current.CreationTimestamp, intruder.CreationTimestamp = metav1.NewTime(clk.Now()), metav1.NewTime(clk.Now())
	f := newFixture(t, Config{Clock: clk, SweepInterval: time.Hour,
		Ours: func(_ podidentity.Owner, p *corev1.Pod) bool { return p.Name != "intruder" }}, old, current, intruder)
	if err := f.workflows.Add(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "live"}}); err != nil {
		t.Fatal(err)
	}

	// The sweep finds the orphan and asks for its key's pass; it releases nothing itself.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.r.cfg.Enqueue = func(p *corev1.Pod) { f.enqueued = append(f.enqueued, p.Name); cancel() }
	f.r.Sweep(ctx)
	if !slices.Equal(f.enqueued, []string{"old"}) {
		t.Errorf("the sweep enqueued %v, want only the orphan", f.enqueued)
	}
	if got := testutil.ToFloat64(f.r.metrics.heldPods.WithLabelValues("ge_1h")); got != 1 {
		t.Errorf("pods holding the finalizer for an hour or more = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.heldPods.WithLabelValues("lt_1m")); got != 2 {
		t.Errorf("pods holding the finalizer for under a minute = %v, want 2", got)
	}

	if err := f.r.ReleaseOrphans(context.Background(), "ns/wf"); err != nil {
		t.Fatal(err)
	}
	if got := f.holding(t); !slices.Equal(got, []string{"current", "intruder"}) {
		t.Errorf("pods holding the finalizer = %v, want the live workflow's pod and the one that is not the controller's", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(releaseOrphaned)); got != 1 {
		t.Errorf("released{orphaned} = %v, want 1", got)
	}
}

func TestAWorkflowThatCannotBeReconciledLosesEveryFinalizerOfItsOwnPods(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 2*ReleaseParallelism + 1 { // more than ReleaseParallelism
		pods = append(pods, pod("p"+strings.Repeat("x", i), "wf", "u1", "id"))
	}
	other := pod("other", "wf", "u2", "id")
	f := newFixture(t, Config{}, append(pods, other)...)
	if err := f.r.ReleaseByOwner(context.Background(), podidentity.Owner{Namespace: "ns", Name: "wf", UID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if got := f.holding(t); !slices.Equal(got, []string{"other"}) {
		t.Errorf("pods holding the finalizer = %v, want only the other workflow UID's", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(releasePersisted)); got != float64(len(pods)) {
		t.Errorf("released{persisted} = %v, want %d", got, len(pods))
	}
	// Its workflow is still there and keeps its pods: only the label takes them out of the pod cache.
	if got := testutil.ToFloat64(f.r.metrics.labelledCompleted); got != float64(len(pods)) {
		t.Errorf("labelled completed = %v, want %d", got, len(pods))
	}
}

func TestAReleasedOrphanIsLabelledCompletedOnlyWhenNothingElseWillRemoveIt(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		sentence  string
		edit      func(*corev1.Pod)
		wantLabel bool
	}{
		{"an orphan that still names its gone workflow is left to the garbage collector", func(*corev1.Pod) {}, false},
		{"an orphan whose ownerReference was removed stays once released, so it is labelled", func(p *corev1.Pod) { p.OwnerReferences = nil }, true},
		{"an orphan without an owner that is being deleted leaves by itself", func(p *corev1.Pod) {
			p.OwnerReferences, p.DeletionTimestamp = nil, &now
		}, false},
		{"an orphan naming its gone workflow that is being deleted leaves by itself", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			orphan := pod("wf-123", "wf", "gone", "wf-123")
			tc.edit(orphan)
			f := newFixture(t, Config{}, orphan)
			if err := f.r.ReleaseOrphans(context.Background(), "ns/wf"); err != nil {
				t.Fatal(err)
			}
			got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), orphan.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(got.Finalizers, Finalizer) {
				t.Errorf("the orphan still holds %s", Finalizer)
			}
			if IsCompleted(got) != tc.wantLabel {
				t.Errorf("labelled completed = %v, want %v", IsCompleted(got), tc.wantLabel)
			}
			wantCount := 0.0
			if tc.wantLabel {
				wantCount = 1
			}
			if n := testutil.ToFloat64(f.r.metrics.labelledCompleted); n != wantCount {
				t.Errorf("labelled completed counter = %v, want %v", n, wantCount)
			}
			if n := testutil.ToFloat64(f.r.metrics.finalizersReleased.WithLabelValues(releaseOrphaned)); n != 1 {
				t.Errorf("released{orphaned} = %v, want 1", n)
			}
		})
	}
}

func TestAPassReleasesReleaseParallelismPodsAtOnce(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 3 * ReleaseParallelism {
		pods = append(pods, pod(fmt.Sprintf("p%03d", i), "wf", "u1", "id"))
	}
	gate := fanouttest.NewGate(ReleaseParallelism)
	f := newFixture(t, Config{}, pods...)
	f.r.cfg.Kube = fanouttest.GatePodPatches(f.kube, gate)
	if err := f.r.ReleaseByOwner(context.Background(), podidentity.Owner{Namespace: "ns", Name: "wf", UID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if got := gate.Most(); got != ReleaseParallelism {
		t.Errorf("at most %d releases in flight, want %d", got, ReleaseParallelism)
	}
	if got := f.holding(t); len(got) != 0 {
		t.Errorf("%d pods still hold the finalizer", len(got))
	}
}
