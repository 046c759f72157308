package doctor_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/doctor"
	"github.com/wfguard/wfguard/explain"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/test/harness"
)

// startController runs a wfguard controller over ns until the returned stop is called.
func startController(t *testing.T, ns string) (stop func()) {
	t.Helper()
	return harness.StartController(t, cp.Config(), controller.Options{Namespace: ns, Workers: 2, StatusFinalizer: true,
		OrphanSweepInterval: time.Minute, Validate: controller.ArgoValidator(versionedClient(t)),
		Logger: slog.New(slog.DiscardHandler)}).Stop
}

func versionedClient(t *testing.T) versioned.Interface {
	t.Helper()
	c, err := inspect.NewClients(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c.Argo
}

func waitUntil(t *testing.T, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	}); err != nil {
		t.Fatalf("never %s: %v", what, err)
	}
}

const liveWorkflow = `
metadata:
  name: live
  annotations: {wfguard.io/task-result-timeout: 1h}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: produce, template: produce}], [{name: after, template: after}]]
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo 1 > /tmp/out"]}
    outputs:
      parameters: [{name: out, valueFrom: {path: /tmp/out}}]
  - name: after
    container: {image: alpine, command: ["true"]}
`

// A real controller and simulated executor produce the waiting state; explain and doctor read it, and
// a doctor repair made while the controller is down unblocks the node once it is back.
func TestOnALiveControllerExplainNamesTheWaitAndARepairUnblocksTheNode(t *testing.T) {
	e := newEnv(t, true)
	began := time.Now()
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: e.ns, Script: simnode.Script{
		ByTemplate: map[string]simnode.Behavior{"produce": {Parameters: map[string]string{"out": "1"}, Fault: simnode.Fault{NeverFinalize: true}}}}})
	stop := startController(t, e.ns)
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(liveWorkflow), wf); err != nil {
		t.Fatal(err)
	}
	wf, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Create(t.Context(), wf, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := wf.NodeID("live[0].produce")
	var since time.Time
	waitUntil(t, "the produce node waits for its task result", func(ctx context.Context) bool {
		u, err := e.clients.Dynamic.Resource(wfv1.WorkflowSchemaGroupVersionKind.GroupVersion().WithResource("workflows")).Namespace(e.ns).Get(ctx, wf.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		got, ext, err := extstatus.FromUnstructured(u)
		if err != nil {
			return false
		}
		n := got.Status.Nodes[id]
		since = taskresult.WaitStart(&ext, &n)
		return taskresult.Waiting(&ext, &n) && strings.HasPrefix(n.Message, engine.WaitingForTaskResultPrefix) && !since.IsZero()
	})

	t.Logf("waiting after %s", time.Since(began))
	snap, err := inspect.ReadSnapshot(t.Context(), e.clients, e.ns, wf.Name)
	if err != nil {
		t.Fatal(err)
	}
	tree := explain.Explain(snap, explain.Options{Now: time.Now()})
	i := slices.IndexFunc(tree.Nodes, func(n explain.Node) bool { return n.ID == id })
	if i < 0 {
		t.Fatalf("no produce node in %+v", tree.Nodes)
	}
	produce := tree.Nodes[i]
	if w := produce.Wait; w == nil || w.On != explain.WaitTaskResult || !w.Since.Equal(since) || !w.Until.Equal(since.Add(time.Hour)) {
		t.Errorf("produce waits %+v; want task-result since %s until +1h (the workflow's annotation)", w, since)
	}
	if produce.Result != explain.ResultIncomplete || produce.Pod == nil || produce.Pod.Finalizer != explain.FinalizerHeld {
		t.Errorf("produce: result %q pod %+v", produce.Result, produce.Pod)
	}

	// Two minutes on, the ended pod with an unfinalized result is a problem, with no repair: its pod exists.
	report := doctor.Audit(t.Context(), e.clients, doctor.Options{Namespace: e.ns, Now: time.Now().Add(2 * time.Minute)})
	expected := []want{{doctor.CheckIncompleteResult, "node live[0].produce (" + id + ")", ""}}
	if got := found(report); !slices.Equal(got, expected) {
		t.Fatalf("found %v, want %v", got, expected)
	}

	// The controller goes down and the pod disappears (its finalizer removed by hand, as people do).
	stop()
	pod, err := e.kube.CoreV1().Pods(e.ns).Get(t.Context(), produce.Pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Finalizers = nil
	if _, err := e.kube.CoreV1().Pods(e.ns).Update(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.CoreV1().Pods(e.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the pod is gone", func(ctx context.Context) bool {
		_, err := e.kube.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	t.Logf("pod gone after %s", time.Since(began))
	report = doctor.Audit(t.Context(), e.clients, doctor.Options{Namespace: e.ns, Now: time.Now().Add(2 * time.Minute)})
	expected = []want{{doctor.CheckIncompleteResult, "node live[0].produce (" + id + ")", doctor.RepairFinalizeResult}}
	if got := found(report); !slices.Equal(got, expected) {
		t.Fatalf("after the pod vanished: found %v, want %v", got, expected)
	}
	if out := doctor.Fix(t.Context(), e.clients, report, true, time.Now()); len(out) != 1 || !out[0].Applied {
		t.Fatalf("repair %+v", out)
	}

	// Back up, the controller merges the finalized result: the node ends Error "pod deleted" with the
	// outputs the executor had written, instead of waiting out its hour.
	startController(t, e.ns)
	waitUntil(t, "the node is fulfilled", func(ctx context.Context) bool {
		got, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(ctx, wf.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n := got.Status.Nodes[id]
		return n.Fulfilled()
	})
	t.Logf("node fulfilled after %s", time.Since(began))
	got, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := got.Status.Nodes[id]
	if n.Phase != wfv1.NodeError || n.Message != "pod deleted" || n.Outputs == nil || len(n.Outputs.Parameters) != 1 {
		t.Errorf("node %s %q outputs %+v", n.Phase, n.Message, n.Outputs)
	}
	// The repair finalized the result; once the workflow completed the controller deletes it, as argo does.
	r, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).Get(t.Context(), id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if now, getErr := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(t.Context(), wf.Name, metav1.GetOptions{}); getErr != nil || !now.Status.Phase.Completed() {
			t.Errorf("the result is gone while the workflow is not completed (%v)", getErr)
		}
	} else if err != nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" {
		t.Errorf("result %v %v", r, err)
	}
}
