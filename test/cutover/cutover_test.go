package cutover_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions"
	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/compat"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// TestWorkflowsInFlightFinishAfterASwitchOfController stops one controller with pods running, suspend nodes
// waiting and earlier nodes done, starts the other on the same namespace, and checks each workflow ends as
// a copy run start to finish by the second controller does: phases, node trees, inputs and outputs. Every
// pod is released of the status finalizer (argo runs with ARGO_POD_STATUS_CAPTURE_FINALIZER=true, so both
// controllers add and remove it; one of argo's running pods has it removed at the switch, as a pod argo
// created before that setting).
func TestWorkflowsInFlightFinishAfterASwitchOfController(t *testing.T) {
	env := newCutoverEnv(t)
	for _, tc := range []struct {
		name          string
		first, second compat.Controller
	}{
		{"argo started them, wfguard finishes them", compat.Argo, compat.WFGuard},
		{"wfguard started them, argo finishes them", compat.WFGuard, compat.Argo},
	} {
		t.Run(tc.name, func(t *testing.T) { env.switchMidFlight(t, tc.first, tc.second) })
	}
}

// cutoverEnv is what both directions share: the module root, a wfguard binary and argo's extra CRDs.
type cutoverEnv struct {
	root, wfguard, image string
}

func newCutoverEnv(t *testing.T) *cutoverEnv {
	t.Helper()
	root := harness.ModuleRoot(t)
	if err := controlplane.InstallCRDs(t.Context(), cp.Config(), filepath.Join(root, "config", "crd", "argo"), time.Minute); err != nil {
		t.Fatal(err)
	}
	bin, err := compat.BuildWFGuard(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image, err := compat.ExecutorImage(root)
	if err != nil {
		t.Fatal(err)
	}
	return &cutoverEnv{root: root, wfguard: bin, image: image}
}

// run is one direction's namespace, node, clients and the gate that holds every "long" pod.
type run struct {
	*harness.Workflows
	t    *testing.T
	env  *cutoverEnv
	gate chan struct{}
	logs string
}

func (e *cutoverEnv) switchMidFlight(t *testing.T, first, second compat.Controller) {
	r := &run{t: t, env: e, Workflows: harness.NewWorkflows(t, cp.Config(), harness.Namespace(t, cp.Config(), "cutover")),
		gate: make(chan struct{}), logs: t.TempDir()}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: r.Namespace, Script: holdLong(r.gate)})
	stopFirst := r.start(first)
	names := r.submitAll("")
	if second == compat.WFGuard {
		r.create(refused, "")
		r.waitMidFlight([]string{"refused"})
	}
	r.waitMidFlight(names)
	if first == compat.Argo {
		// A pod argo created before ARGO_POD_STATUS_CAPTURE_FINALIZER was set has no finalizer.
		r.dropFinalizer(held(r.podsHoldingFinalizer()))
	}
	holding := r.podsHoldingFinalizer()
	if len(holding) == 0 {
		t.Fatalf("no pod of %s holds %s at the switch: the release after it would go untested", first, common.FinalizerPodStatus)
	}
	stopFirst()
	if second == compat.WFGuard {
		r.createOffloaded()
	}
	r.start(second)
	if second == compat.WFGuard {
		r.checkAdoptionRefused("refused", "http template")
		r.waitPodsEnded("refused") // stopped by wfguard: its gate is still closed
		r.checkAdoptionRefused("offloaded", "status.offloadNodeStatusVersion")
	}
	r.resume(second, "suspend")
	close(r.gate)
	r.submitAll("-baseline")
	r.waitSuspended("suspend-baseline")
	r.resume(second, "suspend-baseline")
	for _, name := range names {
		got, want := r.WaitCompleted(name), r.WaitCompleted(name+"-baseline")
		if got.Status.Phase != wfv1.WorkflowSucceeded {
			t.Errorf("%s ended %s (%q) after the switch, want Succeeded\n%s", name, got.Status.Phase, got.Status.Message, harness.Describe(got))
		}
		if len(got.Status.Nodes) == 0 {
			t.Errorf("%s has no nodes after the switch", name)
		}
		if diff := diffTrees(tree(got), tree(want)); diff != "" {
			t.Errorf("%s after the switch differs from a run by %s alone:\n%s", name, second, diff)
		}
	}
	r.checkOutputsPassedOn(r.WaitCompleted("outputs"))
	r.waitReleased()
	t.Logf("%d pods held %s at the switch; all released", len(holding), common.FinalizerPodStatus)
}

// checkOutputsPassedOn: the step after the switch got the outputs the first controller recorded.
func (r *run) checkOutputsPassedOn(wf *wfv1.Workflow) {
	r.t.Helper()
	use := wf.Status.Nodes.FindByDisplayName("use")
	if use == nil {
		r.t.Fatalf("outputs has no node use:\n%s", harness.Describe(wf))
	}
	if got, want := params(use.Inputs), "in=out-value,res=gen-result"; got != want {
		r.t.Errorf("use got inputs %s, want %s (gen's outputs, recorded before the switch)", got, want)
	}
	if got, want := outputs(wf.Status.Nodes[wf.Name].Outputs), "final=echoed-value"; got != want {
		r.t.Errorf("outputs' root node has outputs %s, want %s", got, want)
	}
}

// held picks the pod of the "long" workflow's held step among names.
func held(names []string) string {
	for _, n := range names {
		if strings.HasPrefix(n, "long-long-") {
			return n
		}
	}
	return ""
}

// dropFinalizer removes the status finalizer from pod, which must hold it.
func (r *run) dropFinalizer(pod string) {
	r.t.Helper()
	if pod == "" {
		r.t.Fatal("the long workflow's held pod does not hold the status finalizer")
	}
	patch := `{"metadata":{"finalizers":null}}`
	if _, err := r.Kube.CoreV1().Pods(r.Namespace).Patch(r.t.Context(), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		r.t.Fatalf("removing the finalizer of pod %s: %v", pod, err)
	}
}

func (r *run) podsHoldingFinalizer() []string {
	r.t.Helper()
	pods, err := r.Kube.CoreV1().Pods(r.Namespace).List(r.t.Context(), metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return holdingFinalizer(pods.Items)
}

// holdLong is compat's executor model, with every pod of a template named "long" running until gate closes.
func holdLong(gate <-chan struct{}) simnode.Script {
	model := compat.ExecutorModel()
	return simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		b := model.Func(info)
		if info.Template.Name == "long" {
			b.Hold = gate
		}
		return b
	}}
}

// start runs controller c out of process on the namespace; the returned func stops it (also at the end).
func (r *run) start(c compat.Controller) func() {
	r.t.Helper()
	var stop func() error
	switch c {
	case compat.Argo:
		// INFORMER_WRITE_BACK=false (an argo setting, default true): after each write argo puts its own copy
		// into its informer's store. A resume written between argo's write and that put is overwritten in
		// the store by argo's older copy, with no event left to bring it back, so argo keeps reconciling the
		// node as suspended until its resync. One CI run's baseline workflow, argo's alone, stopped as this
		// race would leave it: the node Succeeded on the server, its step group still Running a minute
		// later, and nothing in argo's log about it.
		o, err := compat.StartOracle(r.t.Context(), cp.Config(), compat.OracleOptions{Root: r.env.root, Kubeconfig: cp.Kubeconfig,
			Namespace: r.Namespace, ExecutorImage: r.env.image, LogPath: filepath.Join(r.logs, "argo.log"),
			Env: []string{common.EnvVarPodStatusCaptureFinalizer + "=true", "INFORMER_WRITE_BACK=false"}})
		if err != nil {
			r.t.Fatal(err)
		}
		stop = o.Stop
		r.t.Cleanup(func() { r.logTail("argo", o.LogTail(30)) })
	case compat.WFGuard:
		p, err := compat.StartWFGuard(compat.WFGuardOptions{Binary: r.env.wfguard, Kubeconfig: cp.Kubeconfig, Namespace: r.Namespace,
			ExecutorImage: r.env.image, LogPath: filepath.Join(r.logs, "wfguard.log")})
		if err != nil {
			r.t.Fatal(err)
		}
		stop = func() error { return p.Stop(10 * time.Second) }
		r.t.Cleanup(func() { r.logTail("wfguard", p.LogTail(30)) })
	}
	var once sync.Once
	stopOnce := func() {
		once.Do(func() {
			if err := stop(); err != nil {
				r.t.Errorf("stopping %s: %v", c, err)
			}
		})
	}
	r.t.Cleanup(stopOnce)
	return stopOnce
}

func (r *run) logTail(name, tail string) {
	if r.t.Failed() {
		r.t.Logf("%s log (last lines):\n%s", name, tail)
	}
}

// submitAll creates every workflow of the workload, each name with suffix.
func (r *run) submitAll(suffix string) []string {
	r.t.Helper()
	var names []string
	for _, manifest := range workflows {
		names = append(names, r.create(manifest, suffix).Name)
	}
	sort.Strings(names)
	return names
}

// create creates the workflow of manifest, its name with suffix.
func (r *run) create(manifest, suffix string) *wfv1.Workflow {
	r.t.Helper()
	wf := harness.ParseWorkflow(r.t, manifest)
	wf.Name += suffix
	return r.Create(wf)
}

// createOffloaded stores a running workflow whose nodes argo offloaded (the Workflow CRD has no status
// subresource: an Update writes status as argo's controller does).
func (r *run) createOffloaded() {
	r.t.Helper()
	created := r.create(offloaded, "")
	created.Status = harness.ParseWorkflow(r.t, offloaded).Status
	if _, err := r.Argo.ArgoprojV1alpha1().Workflows(r.Namespace).Update(r.t.Context(), created, metav1.UpdateOptions{}); err != nil {
		r.t.Fatalf("storing the offloaded workflow's status: %v", err)
	}
}

// checkAdoptionRefused: wfguard ends a running workflow it cannot carry on Error, saying why, with a Warning.
func (r *run) checkAdoptionRefused(name, why string) {
	r.t.Helper()
	wf := r.WaitCompleted(name)
	if wf.Status.Phase != wfv1.WorkflowError || !strings.Contains(wf.Status.Message, why) {
		r.t.Errorf("%s ended %s (%q), want Error saying %q", name, wf.Status.Phase, wf.Status.Message, why)
	}
	events := r.WaitEvent("Workflow", name, engine.ReasonAdoptionRefused)
	if !slices.ContainsFunc(events, func(ev corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Message == wf.Status.Message
	}) {
		r.t.Errorf("no Warning %s on %s with its message %q; its %s events: %+v", engine.ReasonAdoptionRefused, name, wf.Status.Message,
			engine.ReasonAdoptionRefused, events)
	}
}

// waitMidFlight waits until every held pod's node runs (its earlier nodes done) and the suspend node waits.
func (r *run) waitMidFlight(names []string) {
	r.t.Helper()
	for _, name := range names {
		r.WaitFor(name, "mid-flight", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
			for _, n := range wf.Status.Nodes {
				if (n.TemplateName == "long" || n.TemplateName == "approve") && n.Phase == wfv1.NodeRunning {
					return true
				}
			}
			return false
		})
	}
}

func (r *run) waitSuspended(name string) {
	r.t.Helper()
	r.WaitFor(name, "suspended", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		for _, n := range wf.Status.Nodes {
			if n.Type == wfv1.NodeTypeSuspend && n.Phase == wfv1.NodeRunning {
				return true
			}
		}
		return false
	})
}

// resume resumes the workflow's suspend nodes the way controller c is told to: a WorkflowAction for
// wfguard, a write of the node's phase (what `argo resume` does) for argo.
func (r *run) resume(c compat.Controller, name string) {
	r.t.Helper()
	if c == compat.WFGuard {
		client, err := actionsv1.NewForConfig(cp.Config())
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := actions.Request(r.t.Context(), client.Namespace(r.Namespace), actionsv1.WorkflowActionSpec{
			WorkflowRef: actionsv1.WorkflowRef{Name: name}, Action: actionsv1.ActionResume}, nil, 30*time.Second); err != nil {
			r.t.Fatalf("resuming %s: %v", name, err)
		}
		return
	}
	err := wait.PollUntilContextTimeout(r.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		wf, err := r.Argo.ArgoprojV1alpha1().Workflows(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for id, n := range wf.Status.Nodes {
			if n.Type == wfv1.NodeTypeSuspend && n.Phase == wfv1.NodeRunning {
				n.Phase, n.FinishedAt = wfv1.NodeSucceeded, metav1.Now()
				wf.Status.Nodes[id] = n
			}
		}
		_, err = r.Argo.ArgoprojV1alpha1().Workflows(r.Namespace).Update(ctx, wf, metav1.UpdateOptions{})
		return err == nil, nil // a conflict with the controller's own write: read again
	})
	if err != nil {
		r.t.Fatalf("resuming %s: %v", name, err)
	}
}

// waitPodsEnded waits until every pod of workflow name has ended.
func (r *run) waitPodsEnded(name string) {
	r.t.Helper()
	var running []string
	err := wait.PollUntilContextTimeout(r.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := r.Kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + name})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		running = nil
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running = append(running, p.Name+" "+string(p.Status.Phase))
			}
		}
		return len(running) == 0, nil
	})
	if err != nil {
		r.t.Errorf("pods of %s never ended: %v", name, running)
	}
}

// waitReleased waits until no pod of the namespace holds the status finalizer.
func (r *run) waitReleased() {
	r.t.Helper()
	var holding []string
	err := wait.PollUntilContextTimeout(r.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := r.Kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		holding = holdingFinalizer(pods.Items)
		return len(holding) == 0, nil
	})
	if err != nil {
		r.t.Fatalf("pods still hold %s: %v", common.FinalizerPodStatus, holding)
	}
}

func holdingFinalizer(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if slices.Contains(p.Finalizers, common.FinalizerPodStatus) {
			out = append(out, p.Name)
		}
	}
	return out
}

// tree is a workflow's nodes as "name: type phase inputs outputs", names relative to the workflow's, so two
// copies of a workflow under different names compare.
func tree(wf *wfv1.Workflow) map[string]string {
	out := map[string]string{}
	for _, n := range wf.Status.Nodes {
		name := "<wf>" + strings.TrimPrefix(n.Name, wf.Name)
		out[name] = fmt.Sprintf("%s %s in=%s out=%s", n.Type, n.Phase, params(n.Inputs), outputs(n.Outputs))
	}
	return out
}

func params(in *wfv1.Inputs) string {
	if in == nil {
		return "-"
	}
	var ps []string
	for _, p := range in.Parameters {
		ps = append(ps, p.Name+"="+p.Value.String())
	}
	return strings.Join(ps, ",")
}

func outputs(o *wfv1.Outputs) string {
	if o == nil {
		return "-"
	}
	var ps []string
	for _, p := range o.Parameters {
		ps = append(ps, p.Name+"="+p.Value.String())
	}
	if o.Result != nil {
		ps = append(ps, "result="+*o.Result)
	}
	return strings.Join(ps, ",")
}

func diffTrees(got, want map[string]string) string {
	var b strings.Builder
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if got[k] != want[k] {
			fmt.Fprintf(&b, "  %s: got %q, want %q\n", k, got[k], want[k])
		}
	}
	return b.String()
}
