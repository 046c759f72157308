package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// A workflow-level mutex is held across a controller restart: the holder recorded in status keeps it, the
// waiter stays Pending after the restart, and starts once the holder completes.
func TestAMutexHolderKeepsItsLockAcrossARestart(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	const manifest = `
metadata: {name: %s}
spec:
  entrypoint: main
  synchronization: {mutexes: [{name: only-one}]}
  templates:
  - name: main
    metadata: {annotations: {simnode.wfguard.io/run-for: %s}}
    container: {image: alpine, command: ["true"]}
`
	e.Submit(fmt.Sprintf(manifest, "holder", "8s"))
	lock := e.Namespace + "/Mutex/only-one"
	e.WaitFor("holder", "held the mutex", 30*time.Second, func(wf *wfv1.Workflow) bool {
		s := wf.Status.Synchronization
		return wf.Status.Phase == wfv1.WorkflowRunning && s != nil && s.Mutex != nil && len(s.Mutex.Holding) == 1 &&
			s.Mutex.Holding[0].Mutex == lock && s.Mutex.Holding[0].Holder == e.Namespace+"/holder"
	})
	e.Submit(fmt.Sprintf(manifest, "waiter", "0s"))
	waiting := func(wf *wfv1.Workflow) bool {
		return wf.Status.Phase == wfv1.WorkflowPending && strings.HasPrefix(wf.Status.Message, "Waiting for "+lock+" lock.")
	}
	e.WaitFor("waiter", "waited Pending for the mutex", 30*time.Second, waiting)

	e.stopController()
	reconciled := make(chan struct{})
	var once sync.Once
	e.startController(envOptions{hooks: controller.Hooks{ReconcileEnd: func(key string) {
		if key == e.Namespace+"/waiter" {
			once.Do(func() { close(reconciled) })
		}
	}}})
	select {
	case <-reconciled:
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted controller never reconciled the waiter")
	}
	holder := e.WaitFor("holder", "read", time.Second, func(*wfv1.Workflow) bool { return true })
	waiter := e.WaitFor("waiter", "read", time.Second, func(*wfv1.Workflow) bool { return true })
	if holder.Status.Phase.Completed() {
		t.Fatalf("the holder completed before the restarted controller looked at the waiter: the test proves nothing")
	}
	if !waiting(waiter) {
		t.Fatalf("after the restart the waiter is %s %q while the holder still runs", waiter.Status.Phase, waiter.Status.Message)
	}
	if wf := e.WaitCompleted("holder"); wf.Status.Phase != wfv1.WorkflowSucceeded || wf.Status.Synchronization != nil {
		t.Fatalf("the holder ended %s still recording %+v", wf.Status.Phase, wf.Status.Synchronization)
	}
	if wf := e.WaitCompleted("waiter"); wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("the waiter ended %s %q, want Succeeded once the mutex was free", wf.Status.Phase, wf.Status.Message)
	}
}
