package chaos

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	wfactions "github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var (
	seedFlag      = flag.Uint64("chaos.seed", 0, "seed of the fault schedule and pod fates (0: from the clock; printed)")
	workflowsFlag = flag.Int("chaos.workflows", 50, "workflows in the run (make chaos runs more)")
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// The controller-manager's garbage collector deletes pods and results of deleted workflows, as in a cluster.
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{ControllerManager: true}, func(c *controlplane.ControlPlane) { cp = c }))
}

func TestWorkflowsUnderRandomFaultsKeepEveryInvariant(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d — replay with: make chaos SEED=%d WORKFLOWS=%d", seed, seed, *workflowsFlag)
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	n := *workflowsFlag
	ctx, cancel := context.WithTimeout(t.Context(), max(15*time.Minute, time.Duration(n)*3*time.Second))
	defer cancel()

	ns, err := controlplane.CreateNamespace(ctx, cp.Config(), "chaos")
	if err != nil {
		t.Fatal(err)
	}
	config := cp.Config()
	kube := kubernetes.NewForConfigOrDie(config)
	argo := versioned.NewForConfigOrDie(config)
	dyn := dynamic.NewForConfigOrDie(config)
	actionsClient, err := v1alpha1.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	actions := actionsClient.Namespace(ns)
	rec, err := startRecorder(ctx, kube, argo, dyn, actions, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.close()

	rulesText := faultRules(rnd, ns)
	rules, err := faultinject.ParseRules(strings.NewReader(rulesText), time.Now())
	if err != nil {
		t.Fatalf("the generated rules do not parse: %v\n%s", err, rulesText)
	}
	injector := faultinject.NewInjector(rules, seed, nil)
	defer injector.Close()
	points := faultinject.NewPoints()
	coalesce := []time.Duration{0, time.Second}[rnd.IntN(2)]
	t.Logf("faults: status coalesce window %s, rules:\n%s", coalesce, rulesText)
	// The controller talks to the API server through the injector, and is restarted after each crash, as
	// a Deployment restarts a crashed pod.
	faulty := rest.CopyConfig(config)
	faulty.Wrap(injector.WrapTransport)
	loop := harness.StartRestartingController(t, faulty, controller.Options{Namespace: ns, Workers: 8, StatusFinalizer: true,
		TaskResultTimeout: 4 * time.Second, OrphanSweepInterval: 2 * time.Second, StatusCoalesceWindow: coalesce, Points: points,
		Validate: controller.ArgoValidator(argo), WrapListWatch: injector.WrapListWatch, WrapHandler: injector.WrapHandler,
		Logger: slog.New(slog.DiscardHandler)})
	defer loop.Stop()
	node := harness.StartNode(t, config, simnode.Options{Namespace: ns, Script: behaviour(seed), Seed: int64(seed)})
	defer node.Stop()

	crons, err := startCrons(ctx, faulty, argo, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer crons.stop()

	p := plan{deps: map[string]map[string][]string{}, actionKinds: map[string]string{}, retryTargets: map[string]types.UID{}, bombs: map[string]bool{}}
	s := &schedule{t: t, ctx: ctx, rnd: rnd, ns: ns, argo: argo, actions: actions, points: points, rec: rec, plan: &p, specs: map[string]*wfv1.Workflow{}}
	s.run(n)
	waitUntil(t, ctx, fmt.Sprintf("each CronWorkflow to start %d runs under the faults", cronRunsWanted), 2*time.Minute, func() (bool, string) {
		return crons.started(ctx)
	})
	if err := crons.suspend(ctx); err != nil {
		t.Fatal(err)
	}

	// Everything the run started must end: actions terminal, workflows complete (a retried one finished
	// again), finalizers released. Actions are listed first: once all are terminal no Retry can apply any
	// more (its effect is written before its outcome), so the workflows listed after are final.
	waitUntil(t, ctx, "every action to finish and every workflow to complete", max(5*time.Minute, time.Duration(n)*time.Second), func() (bool, string) {
		list, err := actions.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for _, a := range list.Items {
			if !a.Status.Terminal() {
				pending = append(pending, a.Name)
			}
		}
		if len(pending) > 0 {
			return false, "actions " + strings.Join(pending, " ")
		}
		wfList, err := argo.ArgoprojV1alpha1().Workflows(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var running []string
		for _, wf := range wfList.Items {
			if !wf.Status.Phase.Completed() {
				running = append(running, wf.Name+"="+string(wf.Status.Phase))
			}
		}
		return len(running) == 0, "workflows " + strings.Join(running, " ")
	})
	waitUntil(t, ctx, "the CronWorkflows' history limits to be applied to their completed runs", time.Minute, func() (bool, string) {
		wfList, err := argo.ArgoprojV1alpha1().Workflows(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var finals []*wfv1.Workflow
		for i := range wfList.Items {
			finals = append(finals, &wfList.Items[i])
		}
		over := cronHistoryOver(finals)
		return len(over) == 0, fmt.Sprint(over)
	})
	crons.stop()
	waitUntil(t, ctx, "no pod to hold the status finalizer (I5: within a sweep period)", 30*time.Second, func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var held []string
		for _, pod := range pods.Items {
			if slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
				held = append(held, pod.Name)
			}
		}
		return len(held) == 0, strings.Join(held, " ")
	})
	loop.Stop()

	wfs := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}).Namespace(ns)
	final, err := wfs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var finals []*unstructured.Unstructured
	for i := range final.Items {
		finals = append(finals, &final.Items[i])
	}
	h := rec.snapshot()
	violations := check(h, p, finals)
	versions, history, decoded, fates := decodedFinals(t, h, finals, seed)
	report, spurious := explain(versions, history, withoutBombs(p, decoded), fates)
	violations = append(violations, spurious...)
	violations = append(violations, checkBombs(p, decoded)...)
	violations = append(violations, checkCrons(h, decoded)...)

	journal := injector.Journal()
	t.Logf("run: %d workflows submitted, %d deleted (%d recreated), %d actions, %d controller restarts, %d worker pauses, %d API faults injected %s; final phases %v",
		s.submitted, s.deleted, s.recreated, len(p.actionKinds), loop.Restarts(), s.pauses, len(journal), byRule(journal), phases(finals))
	t.Logf("seed %d %s", seed, report)
	if len(journal) == 0 || loop.Restarts() == 0 || s.deleted == 0 || len(p.actionKinds) == 0 {
		t.Errorf("the schedule did not exercise every fault kind (injections %d, restarts %d, deletions %d, actions %d): the run proves less than it claims",
			len(journal), loop.Restarts(), s.deleted, len(p.actionKinds))
	}
	t.Logf("hostile load: %d recursion bombs; CronWorkflow runs started: %s", len(p.bombs), cronCounts(versions))
	retries := retryOutcomes(h, p)
	t.Logf("retries: %d sent to a workflow completed Failed or Error, outcomes %v", s.retriesAtFailed, retries)
	if s.retriesAtFailed > 0 && retries[wfactions.ReasonApplied] == 0 {
		t.Errorf("no Retry was applied although %d were sent to a workflow completed Failed or Error: the retry path went unexercised", s.retriesAtFailed)
	}
	for _, v := range violations {
		t.Errorf("%s", v)
	}
	if len(violations) > 0 {
		t.Logf("replay: make chaos SEED=%d WORKFLOWS=%d; last injections:", seed, *workflowsFlag)
		for _, in := range journal[max(0, len(journal)-40):] {
			t.Logf("  %s %s %s %s %v", in.Time.Format("15:04:05.000"), in.Rule, in.Site, in.Key, in.Action)
		}
	}
}

// faultRules draws the run's faults from the seed, every rule limited to the test's namespace: API errors
// and latency; per resource, watch events late (a stale store), dropped then a forced relist, or heard late
// by the handlers (a fresh store, late notification).
func faultRules(rnd *rand.Rand, ns string) string {
	pct := func(lo, hi int) int { return lo + rnd.IntN(hi-lo+1) }
	var b strings.Builder
	fmt.Fprintf(&b, `pods-create-500   api verb=create resource=pods namespace=%[1]s : %[2]d%%error(500)
workflow-409      api verb=update resource=workflows namespace=%[1]s : %[3]d%%error(409)
pods-patch-429    api verb=patch resource=pods namespace=%[1]s : %[4]d%%error(429,50ms)
results-get-503   api verb=get resource=workflowtaskresults namespace=%[1]s : %[5]d%%error(503)
slow-calls        api namespace=%[1]s : %[6]d%%delay(100ms)
`, ns, pct(2, 8), pct(2, 8), pct(2, 8), pct(5, 20), pct(1, 5))
	for _, resource := range []string{"workflowtaskresults", "pods", "workflows"} {
		// Each resource gets one informer fault, always: which one, and when, is the seed's choice.
		switch rnd.IntN(3) {
		case 0:
			fmt.Fprintf(&b, "%s-stale informer resource=%s namespace=%s : delay(%dms)\n", resource, resource, ns, pct(200, 1500))
		case 1:
			fmt.Fprintf(&b, "%s-drop informer resource=%s namespace=%s : %d*off->%d*drop->reset->off\n", resource, resource, ns, pct(20, 200), pct(1, 5))
		case 2:
			fmt.Fprintf(&b, "%s-late informer resource=%s namespace=%s : %d%%notify-delay(%dms)\n", resource, resource, ns, pct(5, 30), pct(100, 800))
		}
	}
	return b.String()
}

// schedule submits the workload and, between submissions, takes seeded fault steps.
type schedule struct {
	t       *testing.T
	ctx     context.Context
	rnd     *rand.Rand
	ns      string
	argo    versioned.Interface
	actions *v1alpha1.NamespacedClient
	points  *faultinject.Points
	rec     *recorder
	plan    *plan
	specs   map[string]*wfv1.Workflow

	submitted, deleted, recreated, pauses int
	retriesAtFailed                       int // Retries sent to a workflow completed Failed or Error
	names                                 []string
}

// Armed, a crash point fires at its next hit: during-retry-cleanup only once a Retry applies.
var crashPoints = []string{faultinject.PointAfterWorkflowPersist, faultinject.PointBeforeActionStatus, faultinject.PointBeforeFinalizerRelease,
	faultinject.PointDuringRetryCleanup}

func (s *schedule) run(n int) {
	for i := range n {
		name := fmt.Sprintf("wf-%03d", i)
		wf, deps := shapes[s.rnd.IntN(len(shapes))](name)
		s.plan.deps[name] = deps
		s.specs[name] = wf
		s.submit(wf)
		s.names = append(s.names, name)
		if i%10 == 5 {
			s.submitBomb(fmt.Sprintf("bomb-%03d", i))
		}
		if i%3 != 2 {
			continue
		}
		switch step := s.rnd.IntN(10); {
		case step < 3:
			s.points.Crash(crashPoints[s.rnd.IntN(len(crashPoints))], 1)
		case step < 4:
			s.pauseWorkers()
		case step < 6:
			s.deleteOne()
		default:
			s.actionBurst()
		}
	}
	// At least one crash at the most dangerous point, so every run restarts the controller.
	s.points.Crash(faultinject.PointAfterWorkflowPersist, 1)
	if s.deleted == 0 {
		s.deleteOne()
	}
	if len(s.plan.actionKinds) == 0 {
		s.actionBurst()
	}
	if s.retriesAtFailed == 0 {
		s.retryAFailedWorkflow()
	}
	if len(s.plan.bombs) == 0 {
		s.submitBomb("bomb-last")
	}
}

// submitBomb submits a recursion bomb (workload.RecursionBombs: each must end Error at the depth in a few
// hundred nodes, whatever the run deals), of a shape the seed picks. It is left out of names: the run's
// actions and deletions go to the other workflows, whose outcomes the oracle judges.
func (s *schedule) submitBomb(name string) {
	s.submit(workload.RecursionBombs[s.rnd.IntN(len(workload.RecursionBombs))].Workflow(name))
	s.plan.bombs[name] = true
}

func (s *schedule) submit(wf *wfv1.Workflow) {
	if _, err := s.argo.ArgoprojV1alpha1().Workflows(s.ns).Create(s.ctx, wf.DeepCopy(), metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("submitting %s: %v", wf.Name, err)
	}
	s.submitted++
}

// pauseWorkers holds the controller's queue while a few pod events happen, then lets it go.
func (s *schedule) pauseWorkers() {
	s.points.Pause(faultinject.PointWorker)
	s.pauses++
	before := s.rec.podEventCount()
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	for s.rec.podEventCount() < before+5 {
		select {
		case <-s.rec.progress:
		case <-ctx.Done():
			s.points.Resume(faultinject.PointWorker)
			return
		}
	}
	s.points.Resume(faultinject.PointWorker)
}

// deleteOne deletes a random submitted workflow mid-run; every other time it recreates the same name (I6).
func (s *schedule) deleteOne() {
	if len(s.names) == 0 {
		return
	}
	name := s.names[s.rnd.IntN(len(s.names))]
	err := s.argo.ArgoprojV1alpha1().Workflows(s.ns).Delete(s.ctx, name, metav1.DeleteOptions{})
	if err != nil {
		return // already deleted
	}
	s.deleted++
	if s.rnd.IntN(2) == 0 {
		waitUntil(s.t, s.ctx, "the deleted workflow "+name+" to be gone", time.Minute, func() (bool, string) {
			_, err := s.argo.ArgoprojV1alpha1().Workflows(s.ns).Get(s.ctx, name, metav1.GetOptions{})
			return err != nil, ""
		})
		s.submit(s.specs[name])
		s.recreated++
	}
}

// actionBurst sends actions to a few random workflows at once: suspend+resume pairs, stops, terminates and
// retries. A Retry goes mostly to a workflow that has completed Failed or Error, so it really applies (at
// times followed by a Terminate, which must end the new run), else to a random one, most likely running
// (WorkflowNotCompleted) or succeeded (NothingToRetry).
func (s *schedule) actionBurst() {
	for range 1 + s.rnd.IntN(3) {
		if len(s.names) == 0 {
			return
		}
		wf, uid := s.names[s.rnd.IntN(len(s.names))], types.UID("")
		var kinds []string
		switch s.rnd.IntN(6) {
		case 0, 1:
			kinds = []string{v1alpha1.ActionSuspend, v1alpha1.ActionResume}
		case 2:
			kinds = []string{v1alpha1.ActionStop}
		case 3:
			kinds = []string{v1alpha1.ActionTerminate}
		default:
			kinds = []string{v1alpha1.ActionRetry}
			if s.rnd.IntN(4) == 0 {
				kinds = append(kinds, v1alpha1.ActionTerminate)
			}
			if failed := s.completedFailed(); len(failed) > 0 && s.rnd.IntN(4) != 0 {
				target := failed[s.rnd.IntN(len(failed))]
				wf, uid = target.Name, target.UID
				s.retriesAtFailed++
			}
		}
		s.send(wf, uid, kinds...)
	}
}

// send creates the actions on wf, in order; with a uid, pinned to that incarnation of it, and a Retry
// among them is expected to apply (plan.retryTargets).
func (s *schedule) send(wf string, uid types.UID, kinds ...string) {
	base := fmt.Sprintf("%s-x%d", wf, len(s.plan.actionKinds))
	for i, kind := range kinds {
		// Names order a pair created within the same second (creationTimestamp ties break by name).
		name := fmt.Sprintf("%s-%d-%s", base, i+1, strings.ToLower(kind))
		_, err := s.actions.Create(s.ctx, &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: wf, UID: uid}, Action: kind}}, metav1.CreateOptions{})
		if err != nil {
			s.t.Fatalf("creating action %s: %v", name, err)
		}
		s.plan.actionKinds[name] = kind
		if uid != "" && kind == v1alpha1.ActionRetry {
			s.plan.retryTargets[name] = uid
		}
	}
}

// completedFailed lists the workflows that completed Failed or Error with a failed pod node: a Retry
// applies to them.
func (s *schedule) completedFailed() []metav1.ObjectMeta {
	list, err := s.argo.ArgoprojV1alpha1().Workflows(s.ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return nil // a listing error only makes this burst's Retry a random one
	}
	var out []metav1.ObjectMeta
	for _, wf := range list.Items {
		if wf.Status.Phase != wfv1.WorkflowFailed && wf.Status.Phase != wfv1.WorkflowError {
			continue
		}
		for _, n := range wf.Status.Nodes {
			if n.Type == wfv1.NodeTypePod && n.FailedOrError() {
				out = append(out, metav1.ObjectMeta{Name: wf.Name, UID: wf.UID})
				break
			}
		}
	}
	// The seed picks among them, not the list order.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// retryAFailedWorkflow makes sure the run sends a Retry that applies: it waits for a workflow to complete
// Failed or Error (none may, if every workflow succeeds) and retries it.
func (s *schedule) retryAFailedWorkflow() {
	var failed []metav1.ObjectMeta
	waitUntil(s.t, s.ctx, "a workflow to complete Failed or Error, or every workflow to complete", 5*time.Minute, func() (bool, string) {
		if failed = s.completedFailed(); len(failed) > 0 {
			return true, ""
		}
		list, err := s.argo.ArgoprojV1alpha1().Workflows(s.ns).List(s.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !slices.ContainsFunc(list.Items, func(wf wfv1.Workflow) bool { return !wf.Status.Phase.Completed() }), "some still running"
	})
	if len(failed) == 0 {
		return
	}
	target := failed[s.rnd.IntN(len(failed))]
	s.send(target.Name, target.UID, v1alpha1.ActionRetry)
	s.retriesAtFailed++
}

// retryOutcomes counts the Retries by their final reason (Applied, WorkflowNotCompleted, NothingToRetry...).
func retryOutcomes(h history, p plan) map[string]int {
	last := map[string]*v1alpha1.WorkflowAction{}
	for _, a := range h.actions {
		last[a.Name] = a
	}
	out := map[string]int{}
	for name, kind := range p.actionKinds {
		if a, ok := last[name]; ok && kind == v1alpha1.ActionRetry {
			out[a.Status.Reason]++
		}
	}
	return out
}

func waitUntil(t *testing.T, ctx context.Context, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, detail := cond()
		last = detail
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (still: %s)", what, err, last)
	}
}

func byRule(journal []faultinject.Injection) string {
	counts := map[string]int{}
	for _, in := range journal {
		counts[in.Rule]++
	}
	var parts []string
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(parts)
	return "(" + strings.Join(parts, " ") + ")"
}

func phases(final []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, u := range final {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		out[phase]++
	}
	return out
}

// decodedFinals gives the oracle the recorded versions, the final workflows and each pod's seeded fate.
func decodedFinals(t *testing.T, h history, finals []*unstructured.Unstructured, seed uint64) ([]version, history, []*wfv1.Workflow, func(*corev1.Pod) fate) {
	versions, _ := decodeVersions(h) // check reports what does not decode
	var wfs []*wfv1.Workflow
	for _, u := range finals {
		wf, _, err := extstatus.FromUnstructured(u)
		if err != nil {
			t.Errorf("decoding final workflow %s: %v", u.GetName(), err)
			continue
		}
		wfs = append(wfs, wf)
	}
	return versions, h, wfs, func(pod *corev1.Pod) fate { return fateOf(dealt(seed, pod.Namespace, pod.Name)) }
}
