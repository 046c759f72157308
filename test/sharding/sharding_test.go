package sharding_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/actions"
	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// approval waits for a Resume between two pods. %s: name, labels.
const approval = `
metadata: {name: %s, labels: {%s}}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: t}], [{name: approve, template: approve}], [{name: b, template: t}]]
  - {name: t, container: {image: alpine, command: ["true"]}}
  - {name: approve, suspend: {}}
`

const actionTTL = time.Hour

// shard is one controller of the test: its options, what it wrote and which keys it reconciled.
type shard struct {
	name  string
	opts  controller.Options
	log   *writeLog
	clock *testingclock.FakeClock
	gc    chan struct{} // one per finished action GC pass
	ctrl  *harness.Controller

	mu         sync.Mutex
	reconciled map[string]int // key → finished passes
}

func newShard(t *testing.T, name string, opts controller.Options) *shard {
	s := &shard{name: name, log: &writeLog{}, clock: testingclock.NewFakeClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)),
		gc: make(chan struct{}, 100), reconciled: map[string]int{}}
	opts.Workers, opts.StatusFinalizer, opts.Clock, opts.ActionTTL = 4, true, s.clock, actionTTL
	opts.Validate = controller.ArgoValidator(versioned.NewForConfigOrDie(cp.Config()))
	opts.Logger = harness.Logger(t)
	opts.Hooks = controller.Hooks{
		ReconcileEnd: func(key string) {
			s.mu.Lock()
			s.reconciled[key]++
			s.mu.Unlock()
		},
		AfterActionGC: func() { s.gc <- struct{}{} },
	}
	s.opts = opts
	s.start(t)
	return s
}

func (s *shard) start(t *testing.T) {
	s.ctrl = harness.StartController(t, s.log.config(cp.Config()), s.opts)
}

func (s *shard) reconciles(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconciled[key]
}

// gcPass steps the shard's clock past the action TTL and waits for the GC pass that tick starts.
func (s *shard) gcPass(t *testing.T) {
	t.Helper()
	for len(s.gc) > 0 {
		<-s.gc
	}
	s.clock.Step(2 * actionTTL)
	select {
	case <-s.gc:
	case <-t.Context().Done():
		t.Fatalf("%s: no action GC pass after its clock moved", s.name)
	}
}

// checkWritesStayIn fails the test for each write of the shard's controller that ok refuses.
func (s *shard) checkWritesStayIn(t *testing.T, what string, ok func(write) bool) {
	t.Helper()
	bad, total := s.log.outside(ok)
	if total == 0 {
		t.Errorf("%s's controller wrote nothing: its shard did not run", s.name)
	}
	for _, w := range bad {
		t.Errorf("%s's controller wrote outside %s: %s", s.name, what, w)
	}
}

type clients struct {
	argo    versioned.Interface
	kube    kubernetes.Interface
	actions *actionsv1.Client
}

func newClients(t *testing.T) clients {
	a, err := actionsv1.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return clients{argo: versioned.NewForConfigOrDie(cp.Config()), kube: kubernetes.NewForConfigOrDie(cp.Config()), actions: a}
}

// waitTimeout bounds the suite's waits: two controllers on a short workflow.
const waitTimeout = 30 * time.Second

// in is the clients' handle on namespace ns's workflows, reporting to t.
func (c clients) in(t *testing.T, ns string) *harness.Workflows {
	return &harness.Workflows{T: t, Namespace: ns, Kube: c.kube, Argo: c.argo, Timeout: waitTimeout}
}

func (c clients) submit(t *testing.T, ns, name, labels string) {
	t.Helper()
	c.in(t, ns).Submit(fmt.Sprintf(approval, name, labels))
}

func (c clients) waitSuspended(t *testing.T, ns, name string) {
	t.Helper()
	c.in(t, ns).WaitFor(name, "suspended", waitTimeout, func(wf *wfv1.Workflow) bool {
		n := wf.Status.Nodes.FindByDisplayName("approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
}

func (c clients) waitSucceeded(t *testing.T, ns, name string) {
	t.Helper()
	wf := c.in(t, ns).WaitCompleted(name)
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("%s/%s ended %s (%q), want Succeeded", ns, name, wf.Status.Phase, wf.Status.Message)
	}
}

// resume asks for a Resume and waits for its outcome, which must be Succeeded.
func (c clients) resume(t *testing.T, ns, name string) *actionsv1.WorkflowAction {
	t.Helper()
	a, err := actions.Request(t.Context(), c.actions.Namespace(ns), actionsv1.WorkflowActionSpec{
		WorkflowRef: actionsv1.WorkflowRef{Name: name}, Action: actionsv1.ActionResume}, nil, waitTimeout)
	if err != nil {
		t.Fatalf("resuming %s/%s: %v", ns, name, err)
	}
	return a
}

// checkPodsLabelled: every pod of workflow name carries the instance ID (or none when "").
func (c clients) checkPodsLabelled(t *testing.T, ns, name, instance string) {
	t.Helper()
	pods, err := c.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Errorf("%s has no pods", name)
	}
	for _, p := range pods.Items {
		if got := p.Labels[common.LabelKeyControllerInstanceID]; got != instance {
			t.Errorf("pod %s has instance ID %q, want %q", p.Name, got, instance)
		}
	}
}

func TestEachControllerRunsOnlyItsOwnShard(t *testing.T) {
	t.Run("two instance IDs in one namespace", testInstanceIDs)
	t.Run("two managed namespaces", testManagedNamespaces)
}

// testInstanceIDs: alpha and beta share a namespace; each runs its own workflows, never writes the other's
// objects, leaves the other's actions pending (not failed) while the other is down, and never deletes the
// other's expired actions. A workflow without the label is nobody's here.
func testInstanceIDs(t *testing.T) {
	ns := harness.Namespace(t, cp.Config(), "shard")
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	c := newClients(t)
	alpha := newShard(t, "alpha", controller.Options{Namespace: ns, InstanceID: "alpha"})
	beta := newShard(t, "beta", controller.Options{Namespace: ns, InstanceID: "beta"})
	c.submit(t, ns, "alpha-wf", common.LabelKeyControllerInstanceID+": alpha")
	c.submit(t, ns, "beta-wf", common.LabelKeyControllerInstanceID+": beta")
	c.submit(t, ns, "unlabelled-wf", "")
	c.waitSuspended(t, ns, "alpha-wf")
	c.waitSuspended(t, ns, "beta-wf")

	// With beta down, alpha hears of an action for beta's workflow and must leave it to beta.
	beta.ctrl.Stop()
	pending, err := c.actions.Namespace(ns).Create(t.Context(), &actionsv1.WorkflowAction{
		ObjectMeta: metav1.ObjectMeta{Name: "beta-wf-resume"},
		Spec:       actionsv1.WorkflowActionSpec{WorkflowRef: actionsv1.WorkflowRef{Name: "beta-wf"}, Action: actionsv1.ActionResume},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Until(t, "saw alpha look at the action for beta's workflow", waitTimeout, func(context.Context) bool {
		return alpha.reconciles(ns+"/beta-wf") > 0
	})
	if got, err := c.actions.Namespace(ns).Get(t.Context(), pending.Name, metav1.GetOptions{}); err != nil || got.Status.Phase != "" {
		t.Fatalf("alpha decided beta's action: %v %+v", err, got.Status)
	}
	beta.start(t)
	waitAction(t, c, ns, pending.Name, actionsv1.PhaseSucceeded)
	alphaAction := c.resume(t, ns, "alpha-wf")
	c.waitSucceeded(t, ns, "alpha-wf")
	c.waitSucceeded(t, ns, "beta-wf")
	c.checkPodsLabelled(t, ns, "alpha-wf", "alpha")
	c.checkPodsLabelled(t, ns, "beta-wf", "beta")

	// Both actions are past alpha's TTL by its clock; alpha deletes only its own.
	alpha.gcPass(t)
	if _, err := c.actions.Namespace(ns).Get(t.Context(), alphaAction.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("alpha's expired action outlived alpha's GC: %v", err)
	}
	if _, err := c.actions.Namespace(ns).Get(t.Context(), pending.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("alpha's GC deleted beta's action: %v", err)
	}
	beta.gcPass(t)
	if _, err := c.actions.Namespace(ns).Get(t.Context(), pending.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("beta's expired action outlived beta's GC: %v", err)
	}

	if wf, err := c.argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), "unlabelled-wf", metav1.GetOptions{}); err != nil || wf.Status.Phase != "" {
		t.Errorf("a workflow without an instance ID was run by an instance's controller: %v %s", err, wf.Status.Phase)
	}
	for _, s := range []*shard{alpha, beta} {
		s.ctrl.Stop()
		// A completed workflow's task results go in one collection delete, as argo's: it must select that
		// workflow's and this instance's results only.
		s.checkWritesStayIn(t, s.name+"'s objects", func(w write) bool {
			return w.namespace == ns && (strings.HasPrefix(w.name, s.name+"-") ||
				w.resource == "workflowtaskresults" && w.selects(common.LabelKeyControllerInstanceID+"="+s.name) &&
					strings.Contains(w.selector, common.LabelKeyWorkflow+"="+s.name+"-"))
		})
	}
}

// testManagedNamespaces: two controllers without instance IDs, each managing one namespace, run the same
// workflow name side by side and write only in their own namespace.
func testManagedNamespaces(t *testing.T) {
	c := newClients(t)
	var shards []*shard
	var namespaces []string
	for _, name := range []string{"east", "west"} {
		ns := harness.Namespace(t, cp.Config(), name)
		harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
		shards = append(shards, newShard(t, name, controller.Options{Namespace: ns}))
		namespaces = append(namespaces, ns)
		c.submit(t, ns, "same-name", "")
	}
	for _, ns := range namespaces {
		c.waitSuspended(t, ns, "same-name")
		c.resume(t, ns, "same-name")
		c.waitSucceeded(t, ns, "same-name")
		c.checkPodsLabelled(t, ns, "same-name", "")
	}
	for i, s := range shards {
		s.ctrl.Stop()
		s.checkWritesStayIn(t, "namespace "+namespaces[i], func(w write) bool { return w.namespace == namespaces[i] })
	}
}

func waitAction(t *testing.T, c clients, ns, name string, want actionsv1.ActionPhase) {
	t.Helper()
	var last actionsv1.WorkflowActionStatus
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		a, err := c.actions.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = a.Status
		return a.Status.Terminal(), nil
	}); err != nil || last.Phase != want {
		t.Fatalf("action %s ended %+v, want %s (%v)", name, last, want, err)
	}
}
