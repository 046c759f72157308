package taskresult

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// retriedAt is when the workflow of these tests (re)started: status.startedAt.
var retriedAt = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// completedWorkflow is ns/wf (UID uid-1), completed, started at retriedAt.
func completedWorkflow() *wfv1.Workflow {
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "uid-1"},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowFailed, StartedAt: metav1.NewTime(retriedAt)}}
}

// resultOf is the finalized result name of ns/wf owned by UID uid-<owner>, created at created.
func resultOf(name, owner string, created time.Time) *wfv1.WorkflowTaskResult {
	r := result(name, owner, "true", nil)
	r.UID = types.UID("result-" + name + "-" + owner)
	r.CreationTimestamp = metav1.NewTime(created)
	return r
}

// removalCall is one call the Remover made: verb, and the object's name or the collection's selector.
// argo's fake clientset drops DeleteOptions, so the UID preconditions cannot be seen here.
type removalCall struct{ verb, target string }

func removalCalls(client *argofake.Clientset) []removalCall {
	var out []removalCall
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.DeleteCollectionAction:
			out = append(out, removalCall{"deletecollection", a.GetListRestrictions().Labels.String()})
		case k8stesting.DeleteAction:
			out = append(out, removalCall{"delete", a.GetName()})
		}
	}
	slices.SortFunc(out, func(a, b removalCall) int { return strings.Compare(a.target, b.target) })
	return out
}

const ownSelector = "!workflows.argoproj.io/controller-instanceid,workflows.argoproj.io/workflow=wf"

func TestACompletedWorkflowsOwnResultsAreDeletedOnceAndOnlyTheirs(t *testing.T) {
	before := retriedAt.Add(-time.Minute)
	own1, own2 := resultOf("wf-1", "1", before), resultOf("wf-3", "1", before)
	foreign := resultOf("wf-2", "2", before)
	for _, tc := range []struct {
		sentence string
		looks    [][]*wfv1.WorkflowTaskResult // what the cache holds at each look, in order
		fail     error                        // every deletion fails with it
		want     []removalCall                // the calls of all looks
		wantN    []int                        // what each look returns
		wantErr  bool
	}{
		{sentence: "with only its own results cached they go in argo's one call, by its name label and the instance's",
			looks: [][]*wfv1.WorkflowTaskResult{{own1, own2}},
			want:  []removalCall{{"deletecollection", ownSelector}}, wantN: []int{2}},
		{sentence: "with another workflow's result under its name label, each own result is deleted by name and the other is left",
			looks: [][]*wfv1.WorkflowTaskResult{{own1, foreign, own2}},
			want:  []removalCall{{"delete", "wf-1"}, {"delete", "wf-3"}}, wantN: []int{2}},
		{sentence: "results already asked for are not asked again while the cache still holds them",
			looks: [][]*wfv1.WorkflowTaskResult{{own1}, {own1}},
			want:  []removalCall{{"deletecollection", ownSelector}}, wantN: []int{1, 0}},
		{sentence: "a result written after the deletion is deleted on the next look",
			looks: [][]*wfv1.WorkflowTaskResult{{own1}, {own1, own2}},
			want:  []removalCall{{"deletecollection", ownSelector}, {"deletecollection", ownSelector}}, wantN: []int{1, 1}},
		{sentence: "a workflow with no result of its own cached makes no call",
			looks: [][]*wfv1.WorkflowTaskResult{{}, {foreign}}, wantN: []int{0, 0}},
		{sentence: "a failed deletion is returned, and asked again on the next look",
			looks: [][]*wfv1.WorkflowTaskResult{{own1}, {own1}}, fail: errors.New("etcd is down"),
			want: []removalCall{{"deletecollection", ownSelector}, {"deletecollection", ownSelector}}, wantN: []int{0, 0}, wantErr: true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			client := argofake.NewSimpleClientset()
			if tc.fail != nil {
				client.PrependReactor("*", "workflowtaskresults", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.fail })
			}
			r := &Remover{Client: client, InstanceSelector: "!" + common.LabelKeyControllerInstanceID}
			for i, cached := range tc.looks {
				n, err := r.Completed(context.Background(), "ns/wf", completedWorkflow(), cached)
				if (err != nil) != tc.wantErr {
					t.Errorf("look %d: err = %v, want an error: %v", i, err, tc.wantErr)
				}
				if n != tc.wantN[i] {
					t.Errorf("look %d asked to delete %d results, want %d", i, n, tc.wantN[i])
				}
			}
			if got := removalCalls(client); !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}

func TestForgetDropsWhatWasAskedSoAWorkflowOfTheSameNameStartsAfresh(t *testing.T) {
	client := argofake.NewSimpleClientset()
	r := &Remover{Client: client}
	own := resultOf("wf-1", "1", retriedAt)
	for range 2 {
		if _, err := r.Completed(context.Background(), "ns/wf", completedWorkflow(), []*wfv1.WorkflowTaskResult{own}); err != nil {
			t.Fatal(err)
		}
		r.Forget("ns/wf")
	}
	if got := len(removalCalls(client)); got != 2 {
		t.Errorf("%d calls, want 2: each look after Forget asks again", got)
	}
}

func TestDeleteTakesOnlyTheResultItWasGiven(t *testing.T) {
	own := resultOf("wf-1", "1", retriedAt)
	for _, tc := range []struct {
		sentence string
		stored   *wfv1.WorkflowTaskResult // nil: none
	}{
		{sentence: "the result given is deleted", stored: own},
		{sentence: "a result already gone is success"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var objs []runtime.Object
			if tc.stored != nil {
				objs = append(objs, tc.stored.DeepCopy())
			}
			client := argofake.NewSimpleClientset(objs...)
			if err := (&Remover{Client: client}).Delete(context.Background(), own); err != nil {
				t.Fatal(err)
			}
			if got := removalCalls(client); !slices.Equal(got, []removalCall{{"delete", "wf-1"}}) {
				t.Errorf("calls %v, want one delete", got)
			}
			if _, err := client.ArgoprojV1alpha1().WorkflowTaskResults("ns").Get(context.Background(), own.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after the deletion: %v, want NotFound", err)
			}
		})
	}
}

func TestStaleResultsAreTheWorkflowsOwnFromBeforeItStartedWithoutAPod(t *testing.T) {
	before, after := retriedAt.Add(-time.Minute), retriedAt.Add(time.Second)
	withPod := func(id string) map[string]*corev1.Pod {
		return map[string]*corev1.Pod{id: {ObjectMeta: metav1.ObjectMeta{Name: "pod-" + id}}}
	}
	notStarted := completedWorkflow()
	notStarted.Status.StartedAt = metav1.Time{}
	otherNamespace := resultOf("wf-1", "1", before)
	otherNamespace.Namespace = "other"
	otherLabel := resultOf("wf-1", "1", before)
	otherLabel.Labels[common.LabelKeyWorkflow] = "other"
	for _, tc := range []struct {
		sentence string
		wf       *wfv1.Workflow
		result   *wfv1.WorkflowTaskResult
		pods     map[string]*corev1.Pod
		stale    bool
	}{
		{sentence: "its own result from before it (re)started, with no pod of the node, is stale",
			result: resultOf("wf-1", "1", before), stale: true},
		{sentence: "one created in the second it started is stale too (startedAt has 1 s precision)",
			result: resultOf("wf-1", "1", retriedAt.Add(999*time.Millisecond).Truncate(time.Second)), stale: true},
		{sentence: "one created after it started is this run's",
			result: resultOf("wf-1", "1", after)},
		{sentence: "one whose node has a pod is that pod's to write",
			result: resultOf("wf-1", "1", before), pods: withPod("wf-1")},
		{sentence: "another workflow UID's is never ours to delete",
			result: resultOf("wf-1", "2", before)},
		{sentence: "one in another namespace is not ours", result: otherNamespace},
		{sentence: "one labelled for another workflow is not ours", result: otherLabel},
		{sentence: "a workflow that never started has none",
			wf: notStarted, result: resultOf("wf-1", "1", before)},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := tc.wf
			if wf == nil {
				wf = completedWorkflow()
			}
			got := Stale(wf, []*wfv1.WorkflowTaskResult{tc.result}, tc.pods)
			if _, stale := got[tc.result.Name]; stale != tc.stale || len(got) > 1 {
				t.Errorf("stale results %v, want %s stale: %v", fmt.Sprint(got), tc.result.Name, tc.stale)
			}
		})
	}
}
