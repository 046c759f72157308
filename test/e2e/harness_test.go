package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
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
	t    *testing.T
	ns   string
	kube kubernetes.Interface
	argo versioned.Interface
	run  *harness.Env
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
		Namespace: e.ns, Workers: max(o.workers, 4), StatusFinalizer: true,
		Validate: controller.ArgoValidator(e.argo), Logger: harness.Logger(e.t), Hooks: o.hooks,
		WrapListWatch: o.wrap, Clock: o.clock, ActionTTL: o.ttl, Points: o.points,
		StatusCoalesceWindow: o.coalesce, PassDeadline: o.passDeadline, OldPodWait: o.oldPodWait,
		MaxWorkflowSize: o.maxSize,
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
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ns := harness.Namespace(t, cp.Config(), "e2e")
	e := &env{t: t, ns: ns, kube: kubernetes.NewForConfigOrDie(cp.Config()), argo: versioned.NewForConfigOrDie(cp.Config())}
	e.run = harness.Start(t, cp.Config(), e.controllerOptions(o), simnode.Options{Namespace: ns, Script: o.script})
	return e
}

// submit creates the workflow in manifest (YAML).
func (e *env) submit(manifest string) *wfv1.Workflow {
	e.t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		e.t.Fatalf("parsing workflow: %v", err)
	}
	created, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Create(e.t.Context(), wf, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating workflow: %v", err)
	}
	return created
}

// waitFor waits until cond holds for the workflow, failing with its last state.
func (e *env) waitFor(name, what string, timeout time.Duration, cond func(*wfv1.Workflow) bool) *wfv1.Workflow {
	e.t.Helper()
	var last *wfv1.Workflow
	err := wait.PollUntilContextTimeout(e.t.Context(), 25*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		wf, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if err := extstatus.InflateNodes(wf); err != nil {
			return false, err
		}
		last = wf
		return cond(wf), nil
	})
	if err != nil {
		e.t.Fatalf("workflow %s never %s: %v\n%s", name, what, err, describe(last))
	}
	return last
}

func (e *env) waitCompleted(name string) *wfv1.Workflow {
	e.t.Helper()
	return e.waitFor(name, "completed", 60*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
}

func describe(wf *wfv1.Workflow) string {
	if wf == nil {
		return "<no workflow>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s message=%q\n", wf.Status.Phase, wf.Status.Message)
	for _, n := range sortedNodes(wf) {
		fmt.Fprintf(&b, "  %-30s %-10s %-10s synced=%v msg=%q outputs=%s\n", n.Name, n.Type, n.Phase, ptr(n.TaskResultSynced), n.Message, n.Outputs)
	}
	return b.String()
}

func ptr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func sortedNodes(wf *wfv1.Workflow) []wfv1.NodeStatus {
	var nodes []wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes
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
		t.Log(describe(wf))
	}
}

func nodeByName(wf *wfv1.Workflow, name string) *wfv1.NodeStatus {
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return &n
		}
	}
	return nil
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

// podOf returns the pod of a node.
func (e *env) podOf(wf *wfv1.Workflow, nodeName string) *corev1.Pod {
	e.t.Helper()
	n := nodeByName(wf, nodeName)
	if n == nil {
		e.t.Fatalf("no node %s", nodeName)
	}
	pods, err := e.kube.CoreV1().Pods(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range pods.Items {
		if pods.Items[i].Annotations["workflows.argoproj.io/node-id"] == n.ID {
			return &pods.Items[i]
		}
	}
	e.t.Fatalf("no pod for node %s", nodeName)
	return nil
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
	if _, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Patch(e.t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patching workflow %s: %v", name, err)
	}
}

// withT is the same environment reporting to a subtest.
func (e *env) withT(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// metric returns the value of a counter or gauge (summed over label sets matching labels).
func (e *env) metric(name string, labels map[string]string) float64 {
	e.t.Helper()
	families, err := e.run.Controller.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := true
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				match = match && found
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				total += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				total += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

// events returns the messages of the workflow's Events with reason.
func (e *env) events(name, reason string) []string {
	e.t.Helper()
	list, err := e.kube.CoreV1().Events(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}

// waitEvent waits until the workflow has an Event with reason (the recorder writes them asynchronously).
func (e *env) waitEvent(name, reason string) []string {
	e.t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		got = e.events(name, reason)
		return len(got) > 0, nil
	})
	if err != nil {
		e.t.Errorf("workflow %s has no %s event", name, reason)
	}
	return got
}
