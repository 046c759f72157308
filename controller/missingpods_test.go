package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wfguard/wfguard/extstatus"
)

// findMissingPods reads past the cache, within the pass's budget, the pods of nodes the cache lacks, and
// never concludes "deleted" from a read that failed.
func TestAPodTheCacheLacksIsReadFromTheServerWithinTheBudgetAndNeverConcludedGoneOnAnError(t *testing.T) {
	longRunning := podNode("long-running", wfv1.NodeRunning, t0.Add(-time.Minute))
	alsoRunning := podNode("also-running", wfv1.NodeRunning, t0.Add(-time.Minute))
	thirdRunning := podNode("third-running", wfv1.NodeRunning, t0.Add(-time.Minute))
	young := podNode("young", wfv1.NodeRunning, t0.Add(-2*time.Second))
	done := podNode("done", wfv1.NodeSucceeded, t0.Add(-time.Minute))
	done.TaskResultSynced = ptr.To(true)
	waitingForLock := podNode("waiting-for-lock", wfv1.NodePending, t0.Add(-time.Minute))
	waitingForLock.SynchronizationStatus = &wfv1.NodeSynchronizationStatus{Waiting: "ns/Mutex/m"}
	base := running()
	pod := func(n wfv1.NodeStatus) *corev1.Pod { return podOf(base, n, corev1.PodRunning) }
	labelledCompleted := pod(longRunning)
	labelledCompleted.Labels[common.LabelKeyCompleted] = "true"
	departedYoung := pod(young) // left the cache still holding the finalizer: someone else labelled it completed
	departedYoung.Finalizers = []string{common.FinalizerPodStatus}
	anotherOwners := pod(longRunning)
	anotherOwners.OwnerReferences[0].UID = "another-workflow-uid"
	for _, tc := range []missingPodsCase{
		{sentence: "a running node's pod the cache lacks is read from the server and assessed",
			nodes: []wfv1.NodeStatus{longRunning}, server: []runtime.Object{pod(longRunning)},
			wantCalls: []string{"get pods " + pod(longRunning).Name}, wantPods: []string{"long-running"}},
		{sentence: "a pod the cache holds is not read again",
			nodes: []wfv1.NodeStatus{longRunning}, cached: []runtime.Object{pod(longRunning)}, server: []runtime.Object{pod(longRunning)},
			wantPods: []string{"long-running"}},
		{sentence: "a node within the grace, a final node and a node waiting for a lock are not looked for",
			nodes: []wfv1.NodeStatus{young, done, waitingForLock}},
		{sentence: "a pod missing from the server too stays missing: the node is assessed without it",
			nodes: []wfv1.NodeStatus{longRunning}, wantCalls: []string{"get pods " + pod(longRunning).Name}},
		{sentence: "a read that fails leaves the node unverified and asks for a pass soon",
			nodes: []wfv1.NodeStatus{longRunning}, server: []runtime.Object{pod(longRunning)}, react: refusePods("get"),
			wantCalls: []string{"get pods " + pod(longRunning).Name}, wantUnverified: []string{"long-running"}, wantRetrySoon: true},
		{sentence: "past the budget the nodes left are unverified, not read",
			nodes: []wfv1.NodeStatus{longRunning, alsoRunning, thirdRunning}, budget: 2,
			server:    []runtime.Object{pod(longRunning), pod(alsoRunning), pod(thirdRunning)},
			wantCalls: []string{"get pods", "get pods"}, wantRetrySoon: true}, // two pods read, the third node unverified
		{sentence: "a pod that left the cache holding the finalizer is read again, even within the grace",
			nodes: []wfv1.NodeStatus{young}, departed: []*corev1.Pod{departedYoung}, server: []runtime.Object{pod(young)},
			wantCalls: []string{"get pods " + pod(young).Name}, wantPods: []string{"young"}},
		{sentence: "a pod that left the cache and is gone from the server is forgotten",
			nodes: []wfv1.NodeStatus{young}, departed: []*corev1.Pod{departedYoung},
			wantCalls: []string{"get pods " + pod(young).Name}},
		{sentence: "a pod found that another workflow owns is not the node's",
			nodes: []wfv1.NodeStatus{longRunning}, server: []runtime.Object{anotherOwners},
			wantCalls: []string{"get pods " + pod(longRunning).Name}},
		{sentence: "a pod found labelled completed while its node runs gets the label back, an Event and a count",
			nodes: []wfv1.NodeStatus{longRunning}, server: []runtime.Object{labelledCompleted},
			wantCalls: []string{"get pods " + pod(longRunning).Name, "patch pods " + pod(longRunning).Name}, wantPods: []string{"long-running"},
			wantEvents: []string{"Warning PodCompletedLabelRestored Node long-running: its pod " + pod(longRunning).Name + " was labelled"}, wantRestored: 1},
		{sentence: "a label that cannot be restored leaves the pod assessed as read and asks for a pass soon",
			nodes: []wfv1.NodeStatus{longRunning}, server: []runtime.Object{labelledCompleted}, react: refusePods("patch"),
			wantCalls: []string{"get pods " + pod(longRunning).Name, "patch pods " + pod(longRunning).Name}, wantPods: []string{"long-running"},
			wantRetrySoon: true},
	} {
		t.Run(tc.sentence, func(t *testing.T) { tc.run(t) })
	}
}

// refusePods answers every call of verb on pods as an API server that cannot serve it.
func refusePods(verb string) func(*kubefake.Clientset) {
	return func(kube *kubefake.Clientset) {
		kube.PrependReactor(verb, "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is unhappy")
		})
	}
}

type missingPodsCase struct {
	sentence       string
	nodes          []wfv1.NodeStatus
	cached, server []runtime.Object
	departed       []*corev1.Pod // pods that left the cache still holding the finalizer
	budget         int
	react          func(*kubefake.Clientset)
	wantCalls      []string
	wantPods       []string // nodes whose pod the pass has
	wantUnverified []string
	wantRetrySoon  bool
	wantEvents     []string // prefixes
	wantRestored   float64
}

// run looks for the missing pods of a pass over the nodes, with the caches and the API as the case says.
func (tc missingPodsCase) run(t *testing.T) {
	f := newFixture(t, Options{DirectReadBudget: tc.budget}, tc.server...)
	f.cache(tc.cached...)
	for _, pod := range tc.departed {
		f.c.releaser.PodDeleted(pod)
	}
	if tc.react != nil {
		tc.react(f.kube)
	}
	p := f.c.newPass("ns/wf", nil, running(tc.nodes...), extstatus.Extensions{})
	f.c.findMissingPods(t.Context(), p)
	tc.check(t, f, p)
}

func (tc missingPodsCase) check(t *testing.T, f *fixture, p *pass) {
	t.Helper()
	if got := calls(f.kube); !sameCalls(got, tc.wantCalls) {
		t.Errorf("calls %q, want %q", got, tc.wantCalls)
	}
	wf := p.WF
	pods, unverified := nodeNames(wf, mapKeys(p.Pods)), nodeNames(wf, mapKeys(p.Unverified))
	if tc.budget > 0 {
		// Which node's read the budget stops before is the map's order: only the counts are known.
		if len(pods) != 2 || len(unverified) != 1 || slices.Contains(pods, unverified[0]) {
			t.Errorf("pods of %v, unverified %v; want two of three read and the third unverified", pods, unverified)
		}
	} else if !slices.Equal(pods, tc.wantPods) || !slices.Equal(unverified, tc.wantUnverified) {
		t.Errorf("pods of %v, unverified %v; want %v and %v", pods, unverified, tc.wantPods, tc.wantUnverified)
	}
	if retrySoon := p.RequeueAfter() == retrySoon; retrySoon != tc.wantRetrySoon {
		t.Errorf("requeue after %v, want a pass soon: %v", p.RequeueAfter(), tc.wantRetrySoon)
	}
	if got := f.events(); !eventsStartWith(got, tc.wantEvents) {
		t.Errorf("events %q, want %q", got, tc.wantEvents)
	}
	if got := counterValue(t, f.registry, "wfguard_pod_completed_label_restored_total"); got != tc.wantRestored {
		t.Errorf("restored labels counted %v, want %v", got, tc.wantRestored)
	}
	for id, pod := range p.Pods {
		if pod.Labels[common.LabelKeyCompleted] == "true" && tc.react == nil {
			t.Errorf("node %s is assessed from a pod still labelled completed", wf.Status.Nodes[id].Name)
		}
		if slices.Contains(tc.departed, pod) {
			t.Errorf("node %s is assessed from the copy the cache dropped, not from the server's", wf.Status.Nodes[id].Name)
		}
	}
	if len(p.Pods) == 0 && len(tc.departed) > 0 && len(f.c.releaser.Departed(string(wf.UID))) > 0 {
		t.Error("a departed pod gone from the server is still kept aside")
	}
}

// sameCalls compares calls, a wanted call without a name matching any name.
func sameCalls(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] && !strings.HasPrefix(got[i], want[i]+" ") {
			return false
		}
	}
	return true
}

// eventsStartWith reports whether each event starts with the wanted prefix at its place.
func eventsStartWith(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

func mapKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// nodeNames are the names of the nodes with ids, sorted.
func nodeNames(wf *wfv1.Workflow, ids []string) []string {
	var names []string
	for _, id := range ids {
		names = append(names, wf.Status.Nodes[id].Name)
	}
	slices.Sort(names)
	return names
}
