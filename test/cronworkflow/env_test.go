package cronworkflow_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/cronworkflow"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// start is the fake clock's time: 30 s past 12:00, so "* * * * *" next fires at 12:01:00.
var start = time.Date(2026, 12, 4, 12, 0, 30, 0, time.UTC)

// minute is the n-th minute tick after start (12:0n:00).
func minute(n int) time.Time { return start.Truncate(time.Minute).Add(time.Duration(n) * time.Minute) }

// env is one test's namespace with a workflow controller and simulated node (real time) and a fake clock
// for cron reconcilers.
type env struct {
	*harness.Workflows
	t     *testing.T
	clock *clocktesting.FakeClock
	hold  chan struct{} // closing it lets the "hold" template's pods finish
	once  sync.Once
}

// Templates the simulated node runs: "pass" succeeds, "fail" exits 1, "hold" runs until env.release; the
// runs named in failing fail whatever their template.
func newEnv(t *testing.T, failing ...string) *env {
	t.Helper()
	e := &env{t: t, Workflows: harness.NewWorkflows(t, cp.Config(), harness.Namespace(t, cp.Config(), "cron")), clock: clocktesting.NewFakeClock(start), hold: make(chan struct{})}
	script := simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		switch {
		case slices.Contains(failing, info.WorkflowName) || info.Template.Name == "fail":
			return simnode.Behavior{ExitCode: 1}
		case info.Template.Name == "hold":
			return simnode.Behavior{Hold: e.hold}
		}
		return simnode.Behavior{}
	}}
	harness.Start(t, cp.Config(), controller.Options{Namespace: e.Namespace, Workers: 4, StatusFinalizer: true,
		Validate: controller.ArgoValidator(e.Argo), Logger: harness.Logger(t)}, simnode.Options{Namespace: e.Namespace, Script: script})
	return e
}

// release lets the held runs finish.
func (e *env) release() { e.once.Do(func() { close(e.hold) }) }

// reconciler is a running cron reconciler with what the test reads from it.
type reconciler struct {
	*cronworkflow.Reconciler
	t        testing.TB
	registry *prometheus.Registry
	observer *recordingObserver
	stop     func()

	mu     sync.Mutex
	synced map[string]uint64 // key → the highest resourceVersion a pass completed on
	passes map[string]int    // key → passes completed
}

func (r *reconciler) afterSync(key, resourceVersion string) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.synced[key] = max(r.synced[key], rv)
	r.passes[key]++
}

// passCount is how many passes of cwf's key have completed.
func (r *reconciler) passCount(cwf *wfv1.CronWorkflow) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes[cwf.Namespace+"/"+cwf.Name]
}

// passedAfter waits until a pass of cwf's key completes after the first n: with nothing else changing, the
// pass that an event caused, which read the caches the event had reached.
func (e *env) passedAfter(r *reconciler, cwf *wfv1.CronWorkflow, n int) {
	e.t.Helper()
	e.until(fmt.Sprintf("a pass of %s after the first %d", cwf.Name, n), func(context.Context) bool { return r.passCount(cwf) > n })
}

// synced waits until a pass of r completed on cwf or a later copy.
func (e *env) synced(r *reconciler, cwf *wfv1.CronWorkflow) {
	e.t.Helper()
	want, err := strconv.ParseUint(cwf.ResourceVersion, 10, 64)
	if err != nil {
		e.t.Fatal(err)
	}
	e.until("reconciled "+cwf.Name+" at resourceVersion "+cwf.ResourceVersion, func(context.Context) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.synced[cwf.Namespace+"/"+cwf.Name] >= want
	})
}

// startReconciler runs a cron reconciler for the namespace on the env's fake clock until stop or the test's end.
func (e *env) startReconciler() *reconciler {
	e.t.Helper()
	r := &reconciler{t: e.t, registry: prometheus.NewRegistry(), observer: &recordingObserver{}, synced: map[string]uint64{}, passes: map[string]int{}}
	var err error
	r.Reconciler, err = cronworkflow.New(cp.Config(), cronworkflow.Options{Namespace: e.Namespace, Workers: 2, Clock: e.clock,
		Observer: r.observer, ValidateWorkflow: controller.ArgoValidator(e.Argo), Logger: harness.Logger(e.t), Registry: r.registry,
		AfterSync: r.afterSync, RecordKey: harness.RecordKey})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil && ctx.Err() == nil {
			e.t.Errorf("cron reconciler: %v", err)
		}
	}()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(r.stop)
	return r
}

// ignored counts wfguard_cronworkflow_runs_ignored_total.
func (r *reconciler) ignored() float64 {
	r.t.Helper()
	return harness.Metric(r.t, r.registry, "wfguard_cronworkflow_runs_ignored_total", nil)
}

// runs counts wfguard_cronworkflow_runs_total{outcome}.
func (r *reconciler) runs(outcome string) float64 {
	r.t.Helper()
	return harness.Metric(r.t, r.registry, "wfguard_cronworkflow_runs_total", map[string]string{"outcome": outcome})
}

type recordingObserver struct {
	mu    sync.Mutex
	calls []string
}

func (o *recordingObserver) record(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, s)
}

func (o *recordingObserver) Triggered(ns, name string) { o.record("Triggered " + name) }
func (o *recordingObserver) ConcurrencyPolicyTriggered(ns, name, policy string) {
	o.record("ConcurrencyPolicyTriggered " + name + " " + policy)
}
func (o *recordingObserver) SubmissionError(ns, name string) { o.record("SubmissionError " + name) }
func (o *recordingObserver) SpecError(ns, name string)       { o.record("SpecError " + name) }

func (o *recordingObserver) count(call string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.calls {
		if c == call {
			n++
		}
	}
	return n
}

// cronManifest is a CronWorkflow running template tmpl every minute, with extra spec lines (YAML, two-space indented).
func cronManifest(name, tmpl, extra string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata:
  name: %s
spec:
  schedules: ["* * * * *"]
%s
  workflowMetadata:
    labels: {team: cron-tests}
  workflowSpec:
    entrypoint: %s
    templates:
    - name: pass
      container: {image: busybox, command: [sh, -c, "true"]}
    - name: fail
      container: {image: busybox, command: [sh, -c, "true"]}
    - name: hold
      container: {image: busybox, command: [sh, -c, "true"]}
`, name, extra, tmpl)
}

func (e *env) createCron(manifest string) *wfv1.CronWorkflow {
	e.t.Helper()
	cwf := &wfv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), cwf); err != nil {
		e.t.Fatalf("parsing cronworkflow: %v", err)
	}
	created, err := e.Argo.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Create(e.t.Context(), cwf, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating cronworkflow: %v", err)
	}
	return created
}

func (e *env) cron(name string) *wfv1.CronWorkflow {
	e.t.Helper()
	cwf, err := e.Argo.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cwf
}

// until waits for cond, failing with what.
func (e *env) until(what string, cond func(ctx context.Context) bool) {
	e.t.Helper()
	harness.Until(e.t, what, harness.DefaultTimeout, cond)
}

// untilCron waits for cond on the CronWorkflow, failing with its last status.
func (e *env) untilCron(name, what string, cond func(*wfv1.CronWorkflow) bool) *wfv1.CronWorkflow {
	e.t.Helper()
	var last *wfv1.CronWorkflow
	if err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		cwf, err := e.Argo.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = cwf
		return cond(cwf), nil
	}); err != nil {
		e.t.Fatalf("cronworkflow %s never %s: %v; last status %+v", name, what, err, last.Status)
	}
	return last
}

// armed waits until every reconciler's schedule timer is set for at: it has decided everything before.
func (e *env) armed(at time.Time, rs ...*reconciler) {
	e.t.Helper()
	e.until("armed for "+at.String(), func(context.Context) bool {
		for _, r := range rs {
			if !r.NextWake().Equal(at) {
				return false
			}
		}
		return true
	})
}

// tick moves the fake clock to at once the reconcilers are armed for it.
func (e *env) tick(at time.Time, rs ...*reconciler) {
	e.t.Helper()
	e.armed(at, rs...)
	e.clock.SetTime(at)
}

// runName is argo's name of cron's run scheduled at t.
func runName(cron string, t time.Time) string { return fmt.Sprintf("%s-%d", cron, t.Unix()) }

func (e *env) workflow(name string) (*wfv1.Workflow, bool) {
	e.t.Helper()
	wf, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	return wf, err == nil
}

// waitRun waits until the run exists and returns it.
func (e *env) waitRun(name string) *wfv1.Workflow {
	e.t.Helper()
	return e.WaitFor(name, "created", harness.DefaultTimeout, func(*wfv1.Workflow) bool { return true })
}

func (e *env) waitRunPhase(name string, phase wfv1.WorkflowPhase) {
	e.t.Helper()
	e.WaitFor(name, string(phase), harness.DefaultTimeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == phase })
}

// runNames are the workflows labelled as runs of cron, sorted.
func (e *env) runNames(cron string) []string {
	e.t.Helper()
	list, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).List(e.t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyCronWorkflow + "=" + cron})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, wf := range list.Items {
		if wf.DeletionTimestamp == nil {
			names = append(names, wf.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitEvent waits for an Event of the reason on the CronWorkflow and returns the first.
func (e *env) waitEvent(cron, reason string) corev1.Event {
	e.t.Helper()
	return e.WaitEvent("", cron, reason)[0]
}

func activeNames(cwf *wfv1.CronWorkflow) []string {
	var names []string
	for _, ref := range cwf.Status.Active {
		names = append(names, ref.Name)
	}
	slices.Sort(names)
	return names
}
