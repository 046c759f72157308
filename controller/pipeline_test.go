package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

// cp serves every test of the package's one test binary: these external tests (controller_test), which
// start wfguard through test/harness, and the internal unit tests, which need no control plane.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

var workflowsResource = wfv1.SchemeGroupVersion.WithResource("workflows")

// env is one test's namespace with its controller and simulated node (test/harness).
type env struct {
	t    *testing.T
	ns   string
	argo versioned.Interface
	run  *harness.Env
}

// start runs a controller and a simulated node in a fresh namespace until the test ends.
func start(t *testing.T, workers int, hooks controller.Hooks, script simnode.Script) *env {
	t.Helper()
	ns := harness.Namespace(t, cp.Config(), "ctrl")
	h := &env{t: t, ns: ns, argo: versioned.NewForConfigOrDie(cp.Config())}
	h.run = harness.Start(t, cp.Config(), controller.Options{Namespace: ns, Workers: workers, StatusFinalizer: true, Hooks: hooks,
		Logger: slog.New(slog.DiscardHandler)}, simnode.Options{Namespace: ns, Script: script})
	return h
}

// ctrl is the running controller, for its test hooks (export_test.go).
func (h *env) ctrl() *controller.Controller { return h.run.Controller.Controller() }

func (h *env) submit(manifest string) *wfv1.Workflow {
	h.t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		h.t.Fatal(err)
	}
	created, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Create(h.t.Context(), wf, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

// counter sums every series of a counter in the controller's registry (0 when it has none yet).
func (h *env) counter(name string) float64 {
	h.t.Helper()
	return counter(h.t, h.run.Controller.Registry(), name)
}

// counter sums the series of the counter name in reg whose labels include each pair of labels (name,
// value, ...); 0 when there is none yet. Tests read the controller's metrics as /metrics shows them, by
// name, rather than through its private fields.
func counter(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			has := map[string]string{}
			for _, l := range m.GetLabel() {
				has[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if has[labels[i]] != labels[i+1] {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func (h *env) waitCompleted(name string) *wfv1.Workflow {
	h.t.Helper()
	var last *wfv1.Workflow
	err := wait.PollUntilContextTimeout(h.t.Context(), 25*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		wf, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = wf
		return wf.Status.Phase.Completed(), nil
	})
	if err != nil {
		h.t.Fatalf("workflow %s did not complete: %v (last phase %v)", name, err, last)
	}
	return last
}

const fanOut = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: ok}
      - {name: b, template: ok}
      - {name: c, template: ok}
      - {name: d, template: ok, depends: "a && b && c"}
  - name: ok
    container: {image: alpine, command: ["true"]}
`

func TestTwoWorkersNeverReconcileTheSameKeyAtOnce(t *testing.T) {
	var mu sync.Mutex
	inFlight := map[string]bool{}
	overlaps, concurrent, maxConcurrent := 0, 0, 0
	hooks := controller.Hooks{
		ReconcileStart: func(key string) {
			mu.Lock()
			defer mu.Unlock()
			if inFlight[key] {
				overlaps++
			}
			inFlight[key] = true
			concurrent++
			maxConcurrent = max(maxConcurrent, concurrent)
		},
		ReconcileEnd: func(key string) {
			mu.Lock()
			defer mu.Unlock()
			delete(inFlight, key)
			concurrent--
		},
	}
	h := start(t, 16, hooks, simnode.Script{Default: simnode.Behavior{Jitter: 0.5, RunFor: 20 * time.Millisecond}, Func: nil})
	const n = 20
	for i := range n {
		h.submit(fmt.Sprintf(fanOut, fmt.Sprintf("wf-%d", i)))
	}
	for i := range n {
		if wf := h.waitCompleted(fmt.Sprintf("wf-%d", i)); wf.Status.Phase != wfv1.WorkflowSucceeded {
			t.Errorf("wf-%d ended %s: %s", i, wf.Status.Phase, wf.Status.Message)
		}
	}
	// Each pod's finalizer is released exactly once: the expectation absorbs the cache's lag. Releases
	// follow the final persist, so wait for them before counting.
	_ = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return h.counter("wfguard_pod_finalizers_released_total") >= 4*n, nil
	})
	if got := h.counter("wfguard_pod_finalizers_released_total"); got != 4*n {
		t.Errorf("finalizer releases = %v, want exactly one per pod (%d)", got, 4*n)
	}
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Errorf("a key was reconciled by two workers at once %d times", overlaps)
	}
	if maxConcurrent < 2 {
		t.Errorf("workers never ran concurrently (max %d), so the test proved nothing", maxConcurrent)
	}
}

func TestAConflictOnPersistReappliesWithoutLosingAnyUpdate(t *testing.T) {
	var once sync.Once
	var h *env
	var conflictErr error
	hooks := controller.Hooks{BeforePersist: func(key string) {
		// A user edits the workflow between our read and our write, once the workflow has nodes.
		wf, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Get(context.Background(), strings.Split(key, "/")[1], metav1.GetOptions{})
		if err != nil || len(wf.Status.Nodes) == 0 {
			return
		}
		once.Do(func() {
			_, conflictErr = h.argo.ArgoprojV1alpha1().Workflows(h.ns).Patch(context.Background(), wf.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"edited-by":"user"}}}`), metav1.PatchOptions{})
		})
	}}
	h = start(t, 4, hooks, simnode.Script{})
	wf := h.submit(fmt.Sprintf(fanOut, "conflicted"))
	done := h.waitCompleted(wf.Name)
	if conflictErr != nil {
		t.Fatal(conflictErr)
	}
	if done.Status.Phase != wfv1.WorkflowSucceeded || len(done.Status.Nodes) != 5 {
		t.Errorf("workflow = %s with %d nodes, want Succeeded with 5", done.Status.Phase, len(done.Status.Nodes))
	}
	if done.Labels["edited-by"] != "user" {
		t.Errorf("the user's concurrent edit was lost: labels %v", done.Labels)
	}
	if got := counter(t, h.run.Controller.Registry(), "wfguard_workflow_persist_total", "outcome", "conflict"); got < 1 {
		t.Errorf("persist conflicts = %v, want at least 1 (the test did not cause one)", got)
	}
	if got := counter(t, h.run.Controller.Registry(), "wfguard_workflow_persist_total", "outcome", "reapplied"); got < 1 {
		t.Errorf("re-applied persists = %v, want at least 1", got)
	}
}

func TestAStaleCacheCopyIsSkippedQuietly(t *testing.T) {
	h := start(t, 2, controller.Hooks{}, simnode.Script{})
	// A workflow that goes quiet after its first write: nothing but an indefinite suspend.
	wf := h.submit(`
metadata: {name: stale}
spec:
  entrypoint: main
  templates:
  - name: main
    suspend: {}
`)
	key := h.ns + "/" + wf.Name
	// Wait until the controller has written the workflow at least once and its informer has delivered that
	// write: the store shows it a moment before the handler lets go of the stored copy, which a pass would
	// start from instead of skipping.
	var written *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		obj, ok, _ := h.ctrl().WorkflowCache().GetByKey(key)
		if !ok {
			return false, nil
		}
		u := obj.(*unstructured.Unstructured)
		last := h.ctrl().LastWritten(u.GetUID())
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if last != "" && last == u.GetResourceVersion() && phase == string(wfv1.WorkflowRunning) && !h.ctrl().HoldsOwnWrite(u.GetUID()) {
			written = u
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the controller never wrote the workflow: %v", err)
	}
	// Put the submitted (older) copy into the cache, as a lagging watch would.
	old, err := runtimeToUnstructured(wf)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ctrl().WorkflowCache().Update(old); err != nil {
		t.Fatal(err)
	}
	before := h.counter("wfguard_stale_cache_skips_total")
	requeue, err := h.ctrl().Reconcile(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if requeue != controller.StaleRequeue {
		t.Errorf("requeue = %s, want the quiet stale requeue %s", requeue, controller.StaleRequeue)
	}
	if got := h.counter("wfguard_stale_cache_skips_total") - before; got != 1 {
		t.Errorf("stale skips grew by %v, want 1", got)
	}
	latest, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if latest.ResourceVersion != written.GetResourceVersion() {
		t.Errorf("a pass on the stale copy wrote the workflow (rv %s → %s)", written.GetResourceVersion(), latest.ResourceVersion)
	}
}

// With the workflow watch lagging behind the controller's own writes, a pass starts from the object its
// last write stored instead of waiting for the echo, and a user's edit made meanwhile is still kept: the
// pass's write carries the stored resourceVersion, so it conflicts and re-applies.
func TestAPassStartsFromItsOwnLastWriteWhileTheWorkflowWatchLags(t *testing.T) {
	ns := harness.Namespace(t, cp.Config(), "ownwrite")
	rules, err := faultinject.ParseRules(strings.NewReader("lag informer resource=workflows : delay(300ms)\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := faultinject.NewInjector(rules, 1, nil)
	t.Cleanup(in.Close) // registered before the harness's cleanup, so the injector outlives the controller
	var once sync.Once
	var h *env
	var editErr error
	hooks := controller.Hooks{BeforePersist: func(key string) {
		// A user edits the workflow once its second step exists, between the controller's read and write.
		wf, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Get(context.Background(), strings.Split(key, "/")[1], metav1.GetOptions{})
		if err != nil || len(wf.Status.Nodes) < 4 {
			return
		}
		once.Do(func() {
			_, editErr = h.argo.ArgoprojV1alpha1().Workflows(h.ns).Patch(context.Background(), wf.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"edited-by":"user"}}}`), metav1.PatchOptions{})
		})
	}}
	h = &env{t: t, ns: ns, argo: versioned.NewForConfigOrDie(cp.Config())}
	h.run = harness.Start(t, cp.Config(), controller.Options{Namespace: ns, Workers: 2, StatusFinalizer: true, Hooks: hooks,
		Logger: slog.New(slog.DiscardHandler), WrapListWatch: in.WrapListWatch},
		simnode.Options{Namespace: ns, Script: simnode.Script{Default: simnode.Behavior{Parameters: map[string]string{"out": "v"}}}})
	wf := h.submit(`
metadata: {name: chain}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: one, template: emit}
    - - {name: two, template: take, arguments: {parameters: [{name: in, value: "{{steps.one.outputs.parameters.out}}"}]}}
    - - {name: three, template: take, arguments: {parameters: [{name: in, value: "{{steps.two.outputs.parameters.out}}"}]}}
  - name: emit
    container: {image: alpine, command: ["true"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: take
    inputs: {parameters: [{name: in}]}
    container: {image: alpine, command: ["true"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`)
	done := h.waitCompleted(wf.Name)
	if editErr != nil {
		t.Fatal(editErr)
	}
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow ended %s: %s", done.Status.Phase, done.Status.Message)
	}
	for _, n := range done.Status.Nodes {
		if n.Type != wfv1.NodeTypePod {
			continue
		}
		if n.Outputs == nil || len(n.Outputs.Parameters) != 1 || n.Outputs.Parameters[0].Value.String() != "v" {
			t.Errorf("node %s has outputs %v, want out=v", n.DisplayName, n.Outputs)
		}
		if n.DisplayName != "one" && (n.Inputs == nil || len(n.Inputs.Parameters) != 1 || n.Inputs.Parameters[0].Value.String() != "v") {
			t.Errorf("node %s has inputs %v, want in=v from its predecessor", n.DisplayName, n.Inputs)
		}
	}
	if done.Labels["edited-by"] != "user" {
		t.Errorf("the user's edit made while the watch lagged was lost: labels %v", done.Labels)
	}
	if got := h.counter("wfguard_passes_from_own_write_total"); got < 1 {
		t.Errorf("passes from the controller's own last write = %v, want at least 1 (the watch never lagged a write)", got)
	}
	if got := h.counter("wfguard_stale_cache_skips_total"); got != 0 {
		t.Errorf("stale cache skips = %v, want 0: every lagging copy had our write to start from", got)
	}
	if got := counter(t, h.run.Controller.Registry(), "wfguard_workflow_persist_total", "outcome", "reapplied"); got < 1 {
		t.Errorf("re-applied persists = %v, want at least 1 (the user's edit made no conflict)", got)
	}
}

func TestExtensionStatusFieldsSurviveTheControllersWrites(t *testing.T) {
	h := start(t, 2, controller.Hooks{}, simnode.Script{Default: simnode.Behavior{RunFor: time.Hour}})
	wf := h.submit(fmt.Sprintf(fanOut, "extended"))
	// A field argo's types lack, as another wfguard version would have written it; the controller keeps it.
	patch := `{"status":{"suspended":false}}`
	if _, err := h.argo.ArgoprojV1alpha1().Workflows(h.ns).Patch(t.Context(), wf.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Read as the controller does, untyped, so that a field argo's types lack is seen if it is there.
	client := newDynamic(t)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := client.Resource(workflowsResource).Namespace(h.ns).Get(ctx, wf.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		nodes, _, _ := unstructured.NestedMap(u.Object, "status", "nodes")
		suspended, found, _ := unstructured.NestedBool(u.Object, "status", "suspended")
		// Done once the controller has written nodes after our patch, and the field is still there.
		return len(nodes) >= 4 && found && !suspended, nil
	})
	if err != nil {
		t.Fatalf("status.suspended did not survive the controller's writes: %v", err)
	}
}

func TestTheControllerRefusesAWorkflowCRDThatWouldPruneItsStatusFields(t *testing.T) {
	if err := controller.CheckWorkflowCRD(t.Context(), newDynamic(t)); err != nil {
		t.Errorf("argo's minimal CRD preserves unknown status fields, but the check refused it: %v", err)
	}
}

func runtimeToUnstructured(wf *wfv1.Workflow) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(wf)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(wfv1.SchemeGroupVersion.String())
	u.SetKind("Workflow")
	return u, nil
}

func newDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
