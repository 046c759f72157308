package controller_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// Every informer passes through both fault seams, and the controller still finishes workflows when its
// workflow watch is reset, a pod event is dropped, task-result events come late and pod handlers hear late.
func TestInformerFaultsReachEveryInformerAndWorkflowsStillComplete(t *testing.T) {
	ns := harness.Namespace(t, cp.Config(), "seams")
	rules, err := faultinject.ParseRules(strings.NewReader(
		"relist informer resource=workflows : 1*reset->off\n"+
			"lose-pod informer resource=pods : 1*drop->off\n"+
			"slow-results informer resource=workflowtaskresults : 2*delay(200ms)->off\n"+
			"late-pods informer resource=pods : 3*notify-delay(200ms)->off\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := faultinject.NewInjector(rules, 7, nil)
	// Registered before the harness's cleanup, so it runs after it: the injector outlives the controller.
	t.Cleanup(in.Close)
	var mu sync.Mutex
	var wrapped, handled []string
	run := harness.Start(t, cp.Config(), controller.Options{Namespace: ns, Workers: 4, StatusFinalizer: true,
		Logger: slog.New(slog.DiscardHandler),
		WrapListWatch: func(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
			mu.Lock()
			defer mu.Unlock()
			wrapped = append(wrapped, resource)
			return in.WrapListWatch(resource, lw)
		},
		WrapHandler: func(resource string, h cache.ResourceEventHandler) cache.ResourceEventHandler {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, resource)
			return in.WrapHandler(resource, h)
		},
	}, simnode.Options{Namespace: ns})
	// Start has returned from controller.New, which applies the seams to each informer.
	mu.Lock()
	slices.Sort(wrapped)
	slices.Sort(handled)
	// The ConfigMaps' two informers (parameter ConfigMaps, read when a node starts, and artifact-repositories,
	// read when a workflow starts) are only caches: faulted like the others, as configmaps, with no handler.
	handledWant := []string{"pods", "workflowactions", "workflows", "workflowtaskresults"}
	wrappedWant := []string{"configmaps", "configmaps", "pods", "workflowactions", "workflows", "workflowtaskresults"}
	if !slices.Equal(wrapped, wrappedWant) || !slices.Equal(handled, handledWant) {
		t.Errorf("list-watch seam saw %v and handler seam %v, want %v and %v", wrapped, handled, wrappedWant, handledWant)
	}
	mu.Unlock()
	h := &env{t: t, ns: ns, argo: versioned.NewForConfigOrDie(cp.Config()), run: run}
	for i := range 3 {
		h.submit(fmt.Sprintf(fanOut, fmt.Sprintf("faulted-%d", i)))
	}
	for i := range 3 {
		if wf := h.waitCompleted(fmt.Sprintf("faulted-%d", i)); wf.Status.Phase != wfv1.WorkflowSucceeded {
			t.Errorf("faulted-%d ended %s: %s", i, wf.Status.Phase, wf.Status.Message)
		}
	}
	for _, rule := range []string{"relist", "lose-pod", "slow-results", "late-pods"} {
		if err := in.WaitInjected(t.Context(), rule, 1); err != nil {
			t.Error(err)
		}
	}
}
