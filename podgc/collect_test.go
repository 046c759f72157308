package podgc

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/wfguard/wfguard/internal/fanout/fanouttest"
)

func TestMergingCachedPodsWithTheCompletedPodsRead(t *testing.T) {
	copyOf := func(uid, rv string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID(uid), ResourceVersion: rv, Finalizers: finalizers}}
	}
	for _, tc := range []struct {
		sentence       string
		cached, read   *corev1.Pod
		wantVersion    string
		wantFinalizers int
	}{
		{"a cached copy that predates our release loses to the read one", copyOf("u", "10", "f"), copyOf("u", "12"), "12", 0},
		{"a copy settled in this pass, newer than the read one, wins", copyOf("u", "14"), copyOf("u", "12"), "14", 0},
		{"a read copy of another pod of the same node ID does not replace the cached pod", copyOf("u", "10", "f"), copyOf("other", "12"), "10", 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got := merged(map[string]*corev1.Pod{"n": tc.cached}, map[string]*corev1.Pod{"n": tc.read})["n"]
			if got.ResourceVersion != tc.wantVersion || len(got.Finalizers) != tc.wantFinalizers {
				t.Errorf("merged copy = version %s finalizers %v, want version %s with %d finalizers", got.ResourceVersion, got.Finalizers, tc.wantVersion, tc.wantFinalizers)
			}
		})
	}
	if got := merged(nil, map[string]*corev1.Pod{"n": copyOf("u", "3")}); got["n"] == nil {
		t.Error("a completed pod the cache lacks is missing from the merge")
	}
}

// collectCase is one Collect of a workflow whose nodes a, b and c are final, each with its pod.
type collectCase struct {
	sentence    string
	delay       string
	pods        []string // on the API server
	failDelete  string   // the pod whose deletion the API server refuses
	wantDeletes []string
	wantMarks   []string
	wantDeleted float64 // wfguard_podgc_deleted_total
	wantNext    time.Duration
	wantErr     string
}

var collectCases = []collectCase{
	{sentence: "due pods are deleted, each only if it is still the pod decided about",
		pods: []string{"a", "b", "c"}, wantDeletes: []string{"a", "b", "c"}, wantDeleted: 3},
	{sentence: "delayed pods are marked with their deletion time and looked at again then",
		delay: "30s", pods: []string{"a", "b", "c"}, wantMarks: []string{"a", "b", "c"}, wantNext: 30 * time.Second},
	{sentence: "a pod already gone is no error and not counted",
		pods: []string{"a", "c"}, wantDeletes: []string{"a", "b", "c"}, wantDeleted: 2},
	{sentence: "a refused deletion is returned saying what was being done, and the other pods are still deleted",
		pods: []string{"a", "b", "c"}, failDelete: "b", wantDeletes: []string{"a", "b", "c"}, wantDeleted: 2,
		wantErr: "deleting pod ns/b for podGC: etcd is down"},
}

func TestCollectDeletesDuePodsMarksDelayedOnesAndSaysWhatFailed(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range collectCases {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods := workflowWithPods(tc.delay, "a", "b", "c")
			var stored []runtime.Object
			for _, name := range tc.pods {
				stored = append(stored, pods[name])
			}
			kube := fake.NewClientset(stored...)
			kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if d := a.(k8stesting.DeleteActionImpl); d.Name == tc.failDelete {
					return true, nil, errors.New("etcd is down")
				} else if d.DeleteOptions.Preconditions == nil || *d.DeleteOptions.Preconditions.UID != types.UID("u-"+d.Name) {
					t.Errorf("deleting %s without its UID as a precondition", d.Name)
				}
				return false, nil, nil
			})
			reg := prometheus.NewRegistry()
			c, err := NewCollector(kube, clocktesting.NewFakePassiveClock(now), reg)
			if err != nil {
				t.Fatal(err)
			}
			next, err := c.Collect(t.Context(), wf, pods)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error %q, want %q", got, tc.wantErr)
			}
			if next != tc.wantNext {
				t.Errorf("look again in %s, want %s", next, tc.wantNext)
			}
			if got := fanouttest.Names(kube.Actions(), "delete", "pods"); !slices.Equal(got, tc.wantDeletes) {
				t.Errorf("deleted %v, want %v", got, tc.wantDeletes)
			}
			if got := fanouttest.Names(kube.Actions(), "patch", "pods"); !slices.Equal(got, tc.wantMarks) {
				t.Errorf("marked %v, want %v", got, tc.wantMarks)
			}
			if got := testutil.ToFloat64(c.metrics.deleted); got != tc.wantDeleted {
				t.Errorf("deleted counter = %v, want %v", got, tc.wantDeleted)
			}
		})
	}
}

func TestCollectDeletesCallParallelismPodsAtOnce(t *testing.T) {
	var names []string
	for i := range 3 * CallParallelism {
		names = append(names, fmt.Sprintf("p%03d", i))
	}
	wf, pods := workflowWithPods("", names...)
	var stored []runtime.Object
	for _, pod := range pods {
		stored = append(stored, pod)
	}
	gate := fanouttest.NewGate(CallParallelism)
	kube := fake.NewClientset(stored...)
	c, err := NewCollector(fanouttest.GatePodDeletes(kube, gate), clocktesting.NewFakePassiveClock(time.Now()), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Collect(t.Context(), wf, pods); err != nil {
		t.Fatal(err)
	}
	if got := gate.Most(); got != CallParallelism {
		t.Errorf("at most %d deletions in flight, want %d", got, CallParallelism)
	}
	if got := len(fanouttest.Names(kube.Actions(), "delete", "pods")); got != len(names) {
		t.Errorf("%d deletions, want %d", got, len(names))
	}
}

// workflowWithPods is a running workflow under podGC OnPodCompletion (with delay, "" for none) whose
// nodes, named after their pods, are final, and their pods by node ID.
func workflowWithPods(delay string, names ...string) (*wfv1.Workflow, map[string]*corev1.Pod) {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "wf-uid"},
		Spec:   wfv1.WorkflowSpec{PodGC: &wfv1.PodGC{Strategy: wfv1.PodGCOnPodCompletion, DeleteDelayDuration: delay}},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{}}}
	pods := map[string]*corev1.Pod{}
	for _, name := range names {
		wf.Status.Nodes[name] = wfv1.NodeStatus{ID: name, Phase: wfv1.NodeSucceeded, TaskResultSynced: ptr.To(true)}
		pods[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name)}}
	}
	return wf, pods
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCollectFollowsThePodGCTheWorkflowRunsWith(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	onSuccess := &wfv1.PodGC{Strategy: wfv1.PodGCOnPodSuccess}
	onCompletion := &wfv1.PodGC{Strategy: wfv1.PodGCOnPodCompletion}
	for _, tc := range []struct {
		sentence       string
		own, stored    *wfv1.PodGC
		storedSpec     bool // the workflow has a stored spec (a workflowTemplateRef's)
		wantDeletes    []string
		wantAnnotation string
	}{
		{"a podGC only in the stored spec of a workflowTemplateRef (its template's or the workflowDefaults') deletes as it says",
			nil, onSuccess, true, []string{"ok"}, "OnPodSuccess/"},
		{"the stored spec's podGC is the merged one, not the workflow's own left behind",
			onCompletion, onSuccess, true, []string{"ok"}, "OnPodSuccess/"},
		{"a stored spec without podGC deletes nothing", nil, nil, true, nil, ""},
		{"without a stored spec the workflow's own podGC deletes", onCompletion, nil, false, []string{"failed", "ok"}, "OnPodCompletion/"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods := workflowWithPods("", "ok", "failed")
			wf.Status.Nodes["failed"] = wfv1.NodeStatus{ID: "failed", Phase: wfv1.NodeFailed, TaskResultSynced: ptr.To(true)}
			wf.Spec.PodGC = tc.own
			if tc.storedSpec {
				wf.Spec.WorkflowTemplateRef = &wfv1.WorkflowTemplateRef{Name: "lib"}
				wf.Status.StoredWorkflowSpec = &wfv1.WorkflowSpec{PodGC: tc.stored}
			}
			kube := fake.NewClientset(pods["ok"], pods["failed"])
			c, err := NewCollector(kube, clocktesting.NewFakePassiveClock(now), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Collect(t.Context(), wf, pods); err != nil {
				t.Fatal(err)
			}
			got := fanouttest.Names(kube.Actions(), "delete", "pods")
			slices.Sort(got)
			if !slices.Equal(got, tc.wantDeletes) {
				t.Errorf("deleted %v, want %v", got, tc.wantDeletes)
			}
			if got := StrategyAnnotation(wf); got != tc.wantAnnotation {
				t.Errorf("pod annotation %q, want %q", got, tc.wantAnnotation)
			}
		})
	}
}
