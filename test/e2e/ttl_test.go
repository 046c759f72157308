package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// exists reports whether the workflow is still stored.
func (e *env) exists(name string) bool {
	e.t.Helper()
	_, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

// waitGone waits until the workflow is deleted, calling tick on every poll (to move a fake clock).
func (e *env) waitGone(name string, tick func()) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 25*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if !e.exists(name) {
			return true, nil
		}
		tick()
		return false, nil
	})
	if err != nil {
		e.t.Fatalf("workflow %s was never deleted: %v", name, err)
	}
}

func TestTTLStrategyDeletesFinishedWorkflowsByPhaseAcrossARestart(t *testing.T) {
	fake := testingclock.NewFakeClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{clock: fake, script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	const manifest = `
metadata: {name: %s}
spec:
  entrypoint: main
  ttlStrategy: %s
  templates:
  - name: main
    metadata: {annotations: {simnode.wfguard.io/exit-code: "%s"}}
    container: {image: alpine, command: ["true"]}
`
	for _, wf := range []struct{ name, ttl, exitCode string }{
		{"ok-1h", "{secondsAfterSuccess: 3600, secondsAfterCompletion: 60}", "0"},
		{"failed-only-success-ttl", "{secondsAfterSuccess: 60}", "1"},
		{"failed-2h", "{secondsAfterFailure: 7200, secondsAfterCompletion: 60}", "1"},
	} {
		e.Submit(fmt.Sprintf(manifest, wf.name, wf.ttl, wf.exitCode))
	}
	for _, name := range []string{"ok-1h", "failed-only-success-ttl", "failed-2h"} {
		e.WaitCompleted(name)
	}
	// The controller restarts: the due times are derived again from status.finishedAt.
	e.stopController()
	e.startController(envOptions{clock: fake})

	step := func() { fake.Step(5 * time.Minute) }
	e.waitGone("ok-1h", step) // secondsAfterSuccess (1h) wins over secondsAfterCompletion (1m)
	if got := fake.Since(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)); got < time.Hour {
		t.Errorf("the succeeded workflow was deleted after %s, before its secondsAfterSuccess of 1h", got)
	}
	if !e.exists("failed-2h") {
		t.Errorf("the failed workflow was deleted by secondsAfterCompletion, not its secondsAfterFailure of 2h")
	}
	e.waitGone("failed-2h", step)
	if got := fake.Since(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)); got < 2*time.Hour {
		t.Errorf("the failed workflow was deleted after %s, before its 2h", got)
	}
	if !e.exists("failed-only-success-ttl") {
		t.Errorf("a failed workflow whose ttlStrategy only names success was deleted")
	}
	// Their pods keep no status finalizer (owner-reference GC deletes them on a real cluster).
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metaListAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
			t.Errorf("pod %s still holds %s", pod.Name, podfinalizer.Finalizer)
		}
	}
}

func TestAZeroTTLDeletesAWorkflowAsSoonAsItFinishes(t *testing.T) {
	e := newEnv(t, envOptions{})
	wf := e.Submit(`
metadata: {name: gone-at-once}
spec:
  entrypoint: main
  ttlStrategy: {secondsAfterCompletion: 0}
  templates:
  - {name: main, container: {image: alpine, command: ["true"]}}
`)
	e.waitGone(wf.Name, func() {})
}
