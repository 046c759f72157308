package retrycleanup

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/fanout/fanouttest"
)

// retried is when the Retry opened the cleanup; the bound is DefaultTimeout.
var retried = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// world is what the API server and the caches hold when the cleanup looks.
type world struct {
	pods         []*corev1.Pod
	results      []*wfv1.WorkflowTaskResult
	cachedPods   []*corev1.Pod
	failList     error // listing pods fails with it
	refuseDelete error // deleting a pod fails with it
}

// cleanUpCase is one look at a retried workflow's cleanup.
type cleanUpCase struct {
	sentence string
	world    world
	open     bool          // a Retry's cleanup is open
	after    time.Duration // since the Retry
	crash    bool          // the crash point during the cleanup is armed
	// want: the outcome and its message, the calls made, and whether the cleanup is still open.
	want         Outcome
	wantMessage  string // a regular expression
	wantCrash    bool
	wantReleased []string
	wantDeleted  []string
	wantResults  []string
	wantOpen     bool
}

var cleanUpCases = []cleanUpCase{
	{sentence: "a workflow with no open cleanup is left alone: nothing is listed",
		world: world{pods: []*corev1.Pod{runPod("wf.b")}}, want: NotOpen},
	{sentence: "the previous run's pods are released and deleted, its task results deleted, and the cleanup stays open while they were listed",
		world: world{pods: []*corev1.Pod{runPod("wf.a"), runPod("wf.b"), runPod("wf.c", noFinalizer)},
			results: []*wfv1.WorkflowTaskResult{result("wf.a"), result("wf.b"), result("wf.c")}},
		open: true, want: Open, wantReleased: []string{"wf-b"}, wantDeleted: []string{"wf-b", "wf-c"},
		wantResults: []string{"wf.b", "wf.c"}, wantOpen: true},
	{sentence: "pods of current nodes, of another workflow of the same name and not provably this workflow's are never deleted, and the cleanup closes",
		world: world{pods: []*corev1.Pod{runPod("wf.a"), runPod("wf.b", ownedBy("an-older-wf")), runPod("wf.c", named("wf-evil"))},
			results: []*wfv1.WorkflowTaskResult{result("wf.a"), result("wf.b", resultOwnedBy("an-older-wf"))}},
		open: true, want: CleanedUp, wantMessage: regexp.QuoteMeta(cleanedUpMessage)},
	{sentence: "a pod already being deleted is released, not deleted again",
		world: world{pods: []*corev1.Pod{runPod("wf.b", deleting)}}, open: true,
		want: Open, wantReleased: []string{"wf-b"}, wantOpen: true},
	{sentence: "what the pod cache still holds of the previous run keeps the cleanup open",
		world: world{cachedPods: []*corev1.Pod{runPod("wf.a"), runPod("wf.b")}}, open: true,
		want: Open, wantOpen: true},
	{sentence: "once neither the API server nor the caches hold any of the previous run, the cleanup closes",
		world: world{pods: []*corev1.Pod{runPod("wf.a")}, cachedPods: []*corev1.Pod{runPod("wf.a")}}, open: true,
		after: time.Minute, want: CleanedUp, wantMessage: regexp.QuoteMeta(cleanedUpMessage)},
	{sentence: "past the bound what is left is named, five at most, and the workflow ends Error",
		world: world{pods: []*corev1.Pod{runPod("wf.b", noFinalizer), runPod("wf.c", noFinalizer), runPod("wf.d", noFinalizer),
			runPod("wf.e", noFinalizer), runPod("wf.f", noFinalizer), runPod("wf.g", noFinalizer), runPod("wf.h", noFinalizer)}},
		open: true, after: DefaultTimeout, want: TimedOut,
		wantMessage: `^retry could not start: the previous run's \[(pod wf-.-[0-9]+ ){4}pod wf-.-[0-9]+\] and 2 more still existed 5m0s after the retry$`,
		wantDeleted: []string{"wf-b", "wf-c", "wf-d", "wf-e", "wf-f", "wf-g", "wf-h"}},
	{sentence: "an error before the bound keeps the cleanup open",
		world: world{failList: errors.New("etcd is down")}, open: true, after: time.Minute, want: Open, wantOpen: true},
	{sentence: "past the bound an error is named instead of what is left",
		world: world{failList: errors.New("etcd is down")}, open: true, after: DefaultTimeout, want: TimedOut,
		wantMessage: regexp.QuoteMeta("retry could not start within 5m0s: listing pods of ns/wf: etcd is down")},
	{sentence: "past the bound a refused deletion is named, and the other deletions were made",
		world: world{pods: []*corev1.Pod{runPod("wf.b", noFinalizer)}, results: []*wfv1.WorkflowTaskResult{result("wf.b")},
			refuseDelete: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "wf-b", errors.New("no"))},
		open: true, after: 2 * DefaultTimeout, want: TimedOut,
		wantMessage: regexp.QuoteMeta(`retry could not start within 5m0s: deleting the previous run's pod ns/wf-b-` + hash("wf.b") + `: pods "wf-b" is forbidden: no`),
		wantDeleted: []string{"wf-b"}, wantResults: []string{"wf.b"}},
	{sentence: "a crash during the cleanup stops it where a dying process would: pods deleted, task results not",
		world: world{pods: []*corev1.Pod{runPod("wf.b", noFinalizer)}, results: []*wfv1.WorkflowTaskResult{result("wf.b")}}, open: true,
		crash: true, wantCrash: true, wantDeleted: []string{"wf-b"}, wantOpen: true},
}

func TestCleanUpDeletesThePreviousRunAndClosesOnceItIsGone(t *testing.T) {
	for _, tc := range cleanUpCases {
		t.Run(tc.sentence, func(t *testing.T) {
			f := newFixture(t, tc.world)
			if tc.crash {
				f.points.Crash(faultinject.PointDuringRetryCleanup, 1)
			}
			ext := &extstatus.Extensions{}
			if tc.open {
				ext.RetryCleanupSince = &metav1.Time{Time: retried}
			}
			got, err := f.cleaner.CleanUp(context.Background(), retriedWorkflow(), ext, retried.Add(tc.after))
			if errors.Is(err, faultinject.ErrCrash) != tc.wantCrash || (err != nil && !tc.wantCrash) {
				t.Fatalf("err = %v, want a crash: %v", err, tc.wantCrash)
			}
			if got.Outcome != tc.want {
				t.Errorf("outcome %d, want %d", got.Outcome, tc.want)
			}
			if !regexp.MustCompile(tc.wantMessage).MatchString(got.Message) || (tc.wantMessage == "" && got.Message != "") {
				t.Errorf("message %q, want one matching %q", got.Message, tc.wantMessage)
			}
			f.checkCalls(t, tc.wantReleased, tc.wantDeleted, tc.wantResults)
			if open := ext.RetryCleanupSince != nil; open != tc.wantOpen {
				t.Errorf("cleanup open = %v, want %v", open, tc.wantOpen)
			}
		})
	}
}

func TestCleanUpDeletesDeleteParallelismPodsAtOnce(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 3 * DeleteParallelism {
		pods = append(pods, runPod(fmt.Sprintf("wf.n%03d", i), noFinalizer))
	}
	f := newFixture(t, world{pods: pods})
	gate := fanouttest.NewGate(DeleteParallelism)
	f.cleaner.cfg.Kube = fanouttest.GatePodDeletes(f.kube, gate)
	ext := &extstatus.Extensions{RetryCleanupSince: &metav1.Time{Time: retried}}
	if _, err := f.cleaner.CleanUp(context.Background(), retriedWorkflow(), ext, retried); err != nil {
		t.Fatal(err)
	}
	if got := gate.Most(); got != DeleteParallelism {
		t.Errorf("at most %d deletions in flight, want %d", got, DeleteParallelism)
	}
	if got := len(f.calls("delete", "pods")); got != len(pods) {
		t.Errorf("%d deletions, want %d", got, len(pods))
	}
}

// fixture is a Cleaner over fake API servers and caches holding a world.
type fixture struct {
	kube    *kubefake.Clientset
	argo    *argofake.Clientset
	points  *faultinject.Points
	cleaner *Cleaner
}

const (
	byWorkflowUID = "workflowUID"
	byWorkflowKey = "workflowKey"
)

func newFixture(t *testing.T, w world) *fixture {
	t.Helper()
	var pods, results []runtime.Object
	for _, p := range w.pods {
		pods = append(pods, p)
	}
	for _, r := range w.results {
		results = append(results, r)
	}
	f := &fixture{kube: kubefake.NewClientset(pods...), argo: argofake.NewSimpleClientset(results...), points: faultinject.NewPoints()}
	if w.failList != nil {
		f.kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, w.failList })
	}
	if w.refuseDelete != nil {
		f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, w.refuseDelete })
	}
	podCache := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byWorkflowUID: func(obj any) ([]string, error) {
		return []string{string(obj.(*corev1.Pod).OwnerReferences[0].UID)}, nil
	}})
	for _, p := range w.cachedPods {
		if err := podCache.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	resultCache := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byWorkflowKey: func(obj any) ([]string, error) {
		r := obj.(*wfv1.WorkflowTaskResult)
		return []string{r.Namespace + "/" + r.Labels[common.LabelKeyWorkflow]}, nil
	}})
	f.cleaner = New(Config{Kube: f.kube, Argo: f.argo, Pods: podCache, PodsByWorkflowUID: byWorkflowUID,
		Results: resultCache, ResultsByWorkflowKey: byWorkflowKey, Points: f.points, Log: slog.New(slog.DiscardHandler)})
	return f
}

// checkCalls compares the pods released and deleted and the task results deleted with those wanted, by
// node-name stem (pods) or node name (results).
func (f *fixture) checkCalls(t *testing.T, released, deleted, results []string) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"released pods", f.calls("patch", "pods"), stems(released)},
		{"deleted pods", f.calls("delete", "pods"), stems(deleted)},
		{"deleted task results", f.calls("delete", "workflowtaskresults"), ids(results)},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s %v, want %v", c.what, c.got, c.want)
		}
	}
}

// calls is the sorted names of the objects of resource the actions of verb were about.
func (f *fixture) calls(verb, resource string) []string {
	return fanouttest.Names(append(f.kube.Actions(), f.argo.Actions()...), verb, resource)
}

// retriedWorkflow is workflow ns/wf after a Retry removed every node but wf.a.
func retriedWorkflow() *wfv1.Workflow {
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "wf-uid"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowPending, Nodes: wfv1.Nodes{id("wf.a"): {ID: id("wf.a"), Name: "wf.a"}}}}
}

// runPod is the pod the controller created for node (of ns/wf), holding the status finalizer.
func runPod(node string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: stem(node) + "-" + hash(node), UID: types.UID("uid-" + node),
		Labels:          map[string]string{common.LabelKeyWorkflow: "wf"},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: id(node)},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: "wf-uid"}},
		Finalizers:      []string{common.FinalizerPodStatus}}}
	for _, edit := range edits {
		edit(p)
	}
	return p
}

func noFinalizer(p *corev1.Pod) { p.Finalizers = nil }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: retried} }

func ownedBy(uid types.UID) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.OwnerReferences[0].UID = uid }
}

func named(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Name = name }
}

// result is the task result of node (of ns/wf).
func result(node string, edits ...func(*wfv1.WorkflowTaskResult)) *wfv1.WorkflowTaskResult {
	r := &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: id(node), UID: types.UID("result-" + node),
		Labels:          map[string]string{common.LabelKeyWorkflow: "wf"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: "wf-uid"}}}}
	for _, edit := range edits {
		edit(r)
	}
	return r
}

func resultOwnedBy(uid types.UID) func(*wfv1.WorkflowTaskResult) {
	return func(r *wfv1.WorkflowTaskResult) { r.OwnerReferences[0].UID = uid }
}

// id is argo's node ID of node in workflow wf: the workflow's name and the node name's hash.
func id(node string) string { return "wf-" + hash(node) }

// stem is the part of node's pod name before the hash ("wf.b" runs in pod "wf-b-<hash>").
func stem(node string) string { return "wf-" + node[len("wf."):] }

func hash(node string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return fmt.Sprint(h.Sum32())
}

// stems is the pod names of the nodes whose stems are given ("wf-b" for node wf.b).
func stems(names []string) []string {
	var out []string
	for _, s := range names {
		out = append(out, s+"-"+hash("wf."+s[len("wf-"):]))
	}
	slices.Sort(out)
	return out
}

// ids is the task result names (node IDs) of nodes.
func ids(nodes []string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, id(n))
	}
	slices.Sort(out)
	return out
}
