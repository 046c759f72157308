package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	argoconfig "github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/synchronization"
)

// The orphan path: what a deleted workflow leaves behind is settled by its key's pass.
func TestWhatADeletedWorkflowLeftBehindIsSettled(t *testing.T) {
	step := podNode("step", wfv1.NodeSucceeded, t0.Add(-time.Minute))
	held := podOf(running(step), step, corev1.PodSucceeded)
	held.Finalizers = []string{common.FinalizerPodStatus}
	impostor := held.DeepCopy() // claims the workflow, but argo would never name a pod of it so
	impostor.Name, impostor.UID = "wf-impostor", "impostor-uid"
	suspend, suspendStored := pendingAction(t, "suspend", actionsv1.ActionSuspend, t0.Add(-time.Minute))
	for _, tc := range []settleCase{
		{sentence: "a pod still holding the finalizer loses it and keeps its labels: the garbage collector deletes it",
			api: []runtime.Object{held}, cached: []runtime.Object{held}, wantKube: []string{"patch pods " + held.Name},
			check: podSettled(held.Name, false)},
		{sentence: "a pending action fails WorkflowNotFound",
			api: []runtime.Object{suspendStored}, cached: []runtime.Object{suspend}, wantDynamic: []string{"update workflowactions/status suspend"},
			wantEvents:   []string{"Warning WorkflowNotFound workflow wf does not exist"},
			wantOutcomes: map[string]string{"suspend": "Failed WorkflowNotFound: workflow wf does not exist"}},
		{sentence: "an action whose workflow exists outside the cache is another instance's, and is left alone",
			api: []runtime.Object{suspendStored, succeeded(t, "10")}, cached: []runtime.Object{suspend}},
		{sentence: "a pod that claims the workflow but is not the controller's keeps its finalizer, reported once",
			api: []runtime.Object{impostor}, cached: []runtime.Object{impostor},
			wantEvents: []string{"Warning PodIgnored Pod claims workflow ns/wf (UID wf-uid) but is not the pod the controller created for it (unexpected_name)"},
			check: func(t *testing.T, f *fixture, _ time.Duration) {
				if got := sum(f.c.metrics.ignoredPods); got != 1 {
					t.Errorf("ignored pods counted %v, want 1", got)
				}
			}},
		{sentence: "its mutex goes to the next in line and its parallelism slot is freed",
			setup: holdMutexAndSlot, check: mutexAndSlotFreed},
	} {
		t.Run(tc.sentence, func(t *testing.T) { tc.run(t, nil) })
	}
}

// A completed workflow is written again only by a Retry; its passes settle what its completion leaves.
func TestWhatACompletedWorkflowLeavesIsSettled(t *testing.T) {
	step := podNode("step", wfv1.NodeSucceeded, t0.Add(-time.Minute))
	wf := running(step)
	held := podOf(wf, step, corev1.PodSucceeded)
	held.Finalizers = []string{common.FinalizerPodStatus}
	released := podOf(wf, step, corev1.PodSucceeded)
	suspend, suspendStored := pendingAction(t, "suspend", actionsv1.ActionSuspend, t0.Add(-time.Minute))
	applied := extstatus.Extensions{AppliedActions: []extstatus.AppliedAction{{UID: suspend.UID, Name: suspend.Name,
		Outcome: string(actionsv1.PhaseSucceeded), Reason: "Applied", Message: "suspended"}}}
	withGC := func(wf *wfv1.Workflow) { wf.Spec.PodGC = &wfv1.PodGC{Strategy: wfv1.PodGCOnWorkflowCompletion} }
	result, foreign := resultOf(wf, step, wf.UID), resultOf(wf, podNode("other", wfv1.NodeSucceeded, t0), "deleted-wf-uid")
	withTTL := func(finished time.Duration) func(*wfv1.Workflow) {
		return func(wf *wfv1.Workflow) {
			wf.Spec.TTLStrategy = &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](60)}
			wf.Status.FinishedAt = metav1.NewTime(t0.Add(-finished))
		}
	}
	for _, tc := range []settleCase{
		{sentence: "a pod still holding the finalizer is released and labelled completed, with an Event",
			api: []runtime.Object{held}, cached: []runtime.Object{held}, wantKube: []string{"patch pods " + held.Name},
			wantEvents: []string{"Normal PodFinalizersReleased Released the workflows.argoproj.io/status finalizer of 1 pods"},
			check:      podSettled(held.Name, true)},
		{sentence: "a late action fails WorkflowCompleted",
			api: []runtime.Object{suspendStored}, cached: []runtime.Object{suspend}, wantDynamic: []string{"update workflowactions/status suspend"},
			wantEvents:   []string{"Warning WorkflowCompleted workflow wf is already Succeeded"},
			wantOutcomes: map[string]string{"suspend": "Failed WorkflowCompleted: workflow wf is already Succeeded"}},
		{sentence: "an action applied before the workflow completed gets the outcome its record holds",
			ext: applied, api: []runtime.Object{suspendStored}, cached: []runtime.Object{suspend},
			wantDynamic:  []string{"update workflowactions/status suspend"},
			wantEvents:   []string{"Normal Applied suspended"},
			wantOutcomes: map[string]string{"suspend": "Succeeded Applied: suspended"}},
		{sentence: "podGC on completion deletes its pods, the pod's UID a precondition",
			edit: withGC, api: []runtime.Object{released}, cached: []runtime.Object{released},
			wantKube: []string{"patch pods " + released.Name, "delete pods " + released.Name}, check: deletedWithUID(released.UID)},
		{sentence: "a workflow past its ttlStrategy is deleted",
			edit: withTTL(2 * time.Minute), wantArgo: []string{"delete workflows wf"}},
		{sentence: "a workflow whose ttlStrategy is not due yet asks to be looked at again when it is",
			edit: withTTL(20 * time.Second), wantRequeue: 40 * time.Second},
		{sentence: "its mutex goes to the next in line and its parallelism slot is freed",
			setup: holdMutexAndSlot, check: mutexAndSlotFreed},
		{sentence: "its own task results go in argo's one call once its completion is stored",
			api: []runtime.Object{result}, cached: []runtime.Object{result}, wantArgo: []string{"delete-collection workflowtaskresults"}},
		{sentence: "beside another owner's result under its name, each own result is deleted by name and the other left",
			api: []runtime.Object{result, foreign}, cached: []runtime.Object{result, foreign},
			wantArgo: []string{"delete workflowtaskresults " + result.Name}},
		{sentence: "a failed deletion is evented and tried again in 10s, and podGC still runs",
			edit: withGC, api: []runtime.Object{released, result}, cached: []runtime.Object{released, result},
			setup: failResultDeletes, wantArgo: []string{"delete-collection workflowtaskresults"},
			wantKube:    []string{"patch pods " + released.Name, "delete pods " + released.Name},
			wantEvents:  []string{"Warning TaskResultsDeleteFailed Its task results could not be deleted (tried again in 10s): "},
			wantRequeue: 10 * time.Second},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			stored := wf.DeepCopy()
			if tc.edit != nil {
				tc.edit(stored)
			}
			tc.run(t, finished(t, stored, tc.ext))
		})
	}
}

type settleCase struct {
	sentence string
	edit     func(*wfv1.Workflow) // of the completed workflow
	ext      extstatus.Extensions
	api      []runtime.Object // in the API
	cached   []runtime.Object // in the caches
	setup    func(*testing.T, *fixture)
	// want* are in order; the dynamic fake's reads are left out.
	wantKube, wantDynamic, wantArgo []string
	wantEvents                      []string          // prefixes
	wantOutcomes                    map[string]string // action name → "Phase Reason: message"
	wantRequeue                     time.Duration
	check                           func(t *testing.T, f *fixture, requeue time.Duration)
}

// run reconciles ns/wf once with stored (nil: the workflow is gone) in the API and the cache.
func (tc settleCase) run(t *testing.T, stored runtime.Object) {
	objects, cached := tc.api, tc.cached
	if stored != nil {
		objects, cached = append(slices.Clone(objects), stored), append(slices.Clone(cached), stored)
	}
	f := newFixture(t, Options{Config: controllerconfig.Static{Config: &argoconfig.Config{Parallelism: 1}}}, objects...)
	f.cache(cached...)
	if tc.setup != nil {
		tc.setup(t, f)
	}
	requeue, err := f.c.reconcile(t.Context(), "ns/wf")
	if err != nil {
		t.Fatal(err)
	}
	if requeue != tc.wantRequeue {
		t.Errorf("requeue after %v, want %v", requeue, tc.wantRequeue)
	}
	kube, dynamic, argo := calls(f.kube), withoutGets(calls(f.dynamic)), calls(f.argo)
	if !sameCalls(kube, tc.wantKube) || !sameCalls(dynamic, tc.wantDynamic) || !sameCalls(argo, tc.wantArgo) {
		t.Errorf("calls %q, %q and %q; want %q, %q and %q", kube, dynamic, argo, tc.wantKube, tc.wantDynamic, tc.wantArgo)
	}
	if got := f.events(); !eventsStartWith(got, tc.wantEvents) {
		t.Errorf("events %q, want %q", got, tc.wantEvents)
	}
	for name, want := range tc.wantOutcomes {
		if got := f.actionOutcome(name); got != want {
			t.Errorf("action %s ended %q, want %q", name, got, want)
		}
	}
	if tc.check != nil {
		tc.check(t, f, requeue)
	}
}

// finished is wf completed Succeeded as stored with ext, its nodes' finalizers and actions left to settle.
func finished(t testing.TB, wf *wfv1.Workflow, ext extstatus.Extensions) runtime.Object {
	wf = wf.DeepCopy()
	wf.Status.Phase = wfv1.WorkflowSucceeded
	if wf.Status.FinishedAt.IsZero() {
		wf.Status.FinishedAt = metav1.NewTime(t0.Add(-time.Minute))
	}
	wf.Labels = map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}
	return workflow(t, wf, ext, "10")
}

// podSettled checks that the stored pod lost the status finalizer and carries the completed label or not.
func podSettled(name string, completed bool) func(*testing.T, *fixture, time.Duration) {
	return func(t *testing.T, f *fixture, _ time.Duration) {
		pod, err := f.kube.CoreV1().Pods("ns").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pod.Finalizers, common.FinalizerPodStatus) || (pod.Labels[common.LabelKeyCompleted] == "true") != completed {
			t.Errorf("pod finalizers %v, labels %v; want no status finalizer, labelled completed: %v", pod.Finalizers, pod.Labels, completed)
		}
	}
}

// holdMutexAndSlot has ns/wf hold mutex m, with ns/next waiting for it, and a parallelism slot.
func holdMutexAndSlot(t *testing.T, f *fixture) {
	locks, err := synchronization.Locks(&wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "m"}}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, holder := range []string{"ns/wf", "ns/next"} {
		var st *wfv1.SynchronizationStatus
		if _, _, _, err := f.c.locks.TryAcquire(&st, synchronization.Request{Holder: holder, Locks: locks}); err != nil {
			t.Fatal(err)
		}
	}
	f.c.throttle.Running("ns", "wf")
}

// mutexAndSlotFreed checks that ns/next was woken for mutex m and that a newcomer may start.
func mutexAndSlotFreed(t *testing.T, f *fixture, _ time.Duration) {
	if f.c.queue.Len() != 1 {
		t.Fatalf("%d keys queued, want ns/next woken", f.c.queue.Len())
	}
	if key, _ := f.c.queue.Get(); key != "ns/next" {
		t.Errorf("woke %s, want ns/next", key)
	}
	if !f.c.throttle.Admit(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "newcomer"}}) {
		t.Error("a newcomer still waits for the slot")
	}
}

// deletedWithUID checks that every pod deleted was deleted only if it still had one of uids: never a new
// pod of its name. (argo's fake clientset drops DeleteOptions: task results cannot be checked so.)
func deletedWithUID(uids ...types.UID) func(*testing.T, *fixture, time.Duration) {
	return func(t *testing.T, f *fixture, _ time.Duration) {
		for _, a := range f.kube.Actions() {
			if del, ok := a.(clienttesting.DeleteAction); ok {
				if p := del.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || !slices.Contains(uids, *p.UID) {
					t.Errorf("deleted %s with preconditions %+v, want a UID of %v", del.GetName(), p, uids)
				}
			}
		}
	}
}

// resultOf is the finalized task result of node n of wf, owned by workflow UID owner.
func resultOf(wf *wfv1.Workflow, n wfv1.NodeStatus, owner types.UID) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: wf.Namespace, Name: n.ID, UID: types.UID("result-" + n.ID),
		Labels:          map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyReportOutputsCompleted: "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: owner}}}}
}

// failResultDeletes makes every deletion of a task result fail.
func failResultDeletes(_ *testing.T, f *fixture) {
	for _, verb := range []string{"delete", "delete-collection"} {
		f.argo.PrependReactor(verb, "workflowtaskresults", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("etcd is down")
		})
	}
}
