package e2e_test

import (
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// env is one test's namespace with its own controller and simulated node.
type env struct {
	*harness.Workflows
	t   *testing.T
	run *harness.Env
}

// startController runs a controller for the namespace in place of the stopped one.
func (e *env) startController(o envOptions) {
	e.t.Helper()
	e.run.StartController(e.controllerOptions(o))
}

// stopController stops the running controller (idempotent).
func (e *env) stopController() { e.run.Controller.Stop() }

func (e *env) controllerOptions(o envOptions) controller.Options {
	return controller.Options{
		Namespace: e.Namespace, Workers: max(o.workers, 4), StatusFinalizer: !o.noStatusFinalizer,
		Validate: controller.ArgoValidator(e.Argo), Logger: harness.Logger(e.t), Hooks: o.hooks,
		WrapListWatch: o.wrap, Clock: o.clock, ActionTTL: o.ttl, Points: o.points,
		StatusCoalesceWindow: o.coalesce, PassDeadline: o.passDeadline, OldPodWait: o.oldPodWait,
		MaxWorkflowSize: o.maxSize, WrapHandler: o.wrapHandler, OrphanSweepInterval: o.sweep,
		MemoizeTrust: o.memoizeTrust,
	}
}

type envOptions struct {
	script  simnode.Script
	workers int
	hooks   controller.Hooks
	wrap    func(resource string, lw cache.ListerWatcher) cache.ListerWatcher
	clock   clock.WithTicker
	ttl     time.Duration
	points  *faultinject.Points
	// coalesce is the StatusCoalesceWindow (0: every pass writes).
	coalesce time.Duration
	// passDeadline is the PassDeadline (0: the default).
	passDeadline time.Duration
	// oldPodWait bounds a node's wait for a deleted same-named workflow's pod (0: the default).
	oldPodWait time.Duration
	// maxSize is the MaxWorkflowSize (0: the default).
	maxSize int
	// wrapHandler wraps the informers' event handlers (nil: none).
	wrapHandler func(resource string, h cache.ResourceEventHandler) cache.ResourceEventHandler
	// sweep is the OrphanSweepInterval (0: the default).
	sweep time.Duration
	// noStatusFinalizer runs without --pod-status-finalizer.
	noStatusFinalizer bool
	// memoizeTrust is the MemoizeTrust ("": the default, any).
	memoizeTrust memoize.Trust
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ns := harness.Namespace(t, cp.Config(), "e2e")
	e := &env{t: t, Workflows: harness.NewWorkflows(t, cp.Config(), ns)}
	// The running controller's registry: a restart (startController) brings a fresh one.
	e.Metrics = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return e.run.Controller.Registry().Gather() })
	e.run = harness.Start(t, cp.Config(), e.controllerOptions(o), simnode.Options{Namespace: ns, Script: o.script})
	return e
}

// submitRunningPod submits a workflow of one container template named name and waits until its pod runs.
func (e *env) submitRunningPod(name string) *wfv1.Workflow {
	e.t.Helper()
	wf := e.Submit(fmt.Sprintf(`
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: ["true"]}
`, name))
	return e.WaitFor(wf.Name, "running its pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, name)
		return n != nil && n.Phase == wfv1.NodeRunning
	})
}

// nodeSummary is what a test asserts about one node.
type nodeSummary struct {
	Type    wfv1.NodeType
	Phase   wfv1.NodePhase
	Message string
}

func summarize(wf *wfv1.Workflow) map[string]nodeSummary {
	out := map[string]nodeSummary{}
	for _, n := range wf.Status.Nodes {
		out[n.Name] = nodeSummary{n.Type, n.Phase, n.Message}
	}
	return out
}

func assertNodes(t *testing.T, wf *wfv1.Workflow, want map[string]nodeSummary) {
	t.Helper()
	got := summarize(wf)
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("node %s missing", name)
			continue
		}
		if g != w {
			t.Errorf("node %s = %+v, want %+v", name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected node %s: %+v", name, got[name])
		}
	}
	if t.Failed() {
		t.Log(harness.Describe(wf))
	}
}

func outputParam(n *wfv1.NodeStatus, name string) string {
	if n == nil || n.Outputs == nil {
		return "<none>"
	}
	for _, p := range n.Outputs.Parameters {
		if p.Name == name && p.Value != nil {
			return p.Value.String()
		}
	}
	return "<none>"
}

func mainArgs(pod *corev1.Pod) []string {
	for _, c := range pod.Spec.Containers {
		if c.Name == "main" {
			return append(append([]string{}, c.Command...), c.Args...)
		}
	}
	return nil
}

var metaListAll = metav1.ListOptions{}

// patchSpec merge-patches the workflow as a user or argo CLI would.
func (e *env) patchSpec(name, patch string) {
	e.t.Helper()
	if _, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Patch(e.t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patching workflow %s: %v", name, err)
	}
}

// withT is the same environment reporting to a subtest.
func (e *env) withT(t *testing.T) *env {
	c := *e
	c.t, c.Workflows = t, e.Workflows.WithT(t)
	return &c
}
