package controller

import (
	"testing"

	argoconfig "github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/synchronization"
)

// After a restart, before any worker runs, the running workflows' status gives back what they held: a
// newcomer waits for a mutex a running workflow holds, and for the parallelism slot it takes.
func TestARestartedControllerGivesBackTheLocksAndSlotsOfRunningWorkflows(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		cached   []runtime.Object
		// wantLockTaken: a newcomer cannot take mutex m; wantSlotTaken: nor start, under parallelism 1.
		wantLockTaken, wantSlotTaken bool
	}{
		{sentence: "a running workflow keeps its mutex and its slot",
			cached: []runtime.Object{holding(t, "holder", wfv1.WorkflowRunning, false)}, wantLockTaken: true, wantSlotTaken: true},
		{sentence: "a pending workflow keeps its mutex but holds no slot",
			cached: []runtime.Object{holding(t, "holder", wfv1.WorkflowPending, false)}, wantLockTaken: true},
		{sentence: "a completed workflow's recorded lock and slot are free",
			cached: []runtime.Object{holding(t, "holder", wfv1.WorkflowSucceeded, true)}},
		{sentence: "a workflow argo's types cannot read is passed over (its pass fails it)",
			cached: []runtime.Object{unreadable(false)}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			f := newFixture(t, Options{Config: controllerconfig.Static{Config: &argoconfig.Config{Parallelism: 1}}})
			f.cache(tc.cached...)
			f.c.restoreLocks()

			locks, err := synchronization.Locks(&wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "m"}}, "ns")
			if err != nil {
				t.Fatal(err)
			}
			var st *wfv1.SynchronizationStatus
			acquired, _, _, err := f.c.locks.TryAcquire(&st, synchronization.Request{Holder: "ns/newcomer", Locks: locks})
			if err != nil || acquired == tc.wantLockTaken {
				t.Errorf("a newcomer acquired mutex m: %v (%v), want %v", acquired, err, !tc.wantLockTaken)
			}
			newcomer := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "newcomer"}}
			if admitted := f.c.throttle.Admit(newcomer); admitted == tc.wantSlotTaken {
				t.Errorf("a newcomer was admitted: %v, want %v", admitted, !tc.wantSlotTaken)
			}
		})
	}
}

// holding is workflow ns/name in phase, holding mutex m of ns in its status.
func holding(t *testing.T, name string, phase wfv1.WorkflowPhase, completed bool) runtime.Object {
	wf := running()
	wf.Name, wf.UID, wf.Status.Phase = name, types.UID("uid-"+name), phase
	wf.Status.Synchronization = &wfv1.SynchronizationStatus{Mutex: &wfv1.MutexStatus{
		Holding: []wfv1.MutexHolding{{Mutex: "ns/Mutex/m", Holder: "ns/" + name}}}}
	if completed {
		wf.Labels = map[string]string{common.LabelKeyCompleted: "true"}
	}
	return workflow(t, wf, extstatus.Extensions{}, "7")
}
