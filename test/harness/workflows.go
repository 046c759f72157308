package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
)

// DefaultTimeout bounds WaitCompleted and WaitEvent unless Workflows.Timeout says otherwise; suites pass
// it to WaitFor and Until where they have no reason for another bound.
const DefaultTimeout = 60 * time.Second

// pollInterval is how often a wait reads again: short next to any timeout, cheap for the apiserver.
const pollInterval = 25 * time.Millisecond

// Workflows is a test's handle on the workflows of one namespace: it submits them, waits on their state,
// finds their nodes' pods and Events, and reads the metrics of the controller running them. Each failure
// fails T with a message that describes the workflow as last seen.
type Workflows struct {
	T         testing.TB
	Namespace string
	Kube      kubernetes.Interface
	Argo      versioned.Interface
	// Labels are added to every workflow Submit and Create write (e.g. the controller instance ID).
	Labels map[string]string
	// Timeout bounds WaitCompleted and WaitEvent; 0 is DefaultTimeout.
	Timeout time.Duration
	// Metrics is the registry Metric reads (e.g. a GathererFunc over a restarting controller's Registry).
	Metrics prometheus.Gatherer
	// Diagnose, when set, adds what it returns to the message of a failed wait or lookup (e.g. the pods).
	Diagnose func() string
}

// NewWorkflows is a Workflows for namespace ns with clients for config.
func NewWorkflows(t testing.TB, config *rest.Config, ns string) *Workflows {
	return &Workflows{T: t, Namespace: ns, Kube: kubernetes.NewForConfigOrDie(config), Argo: versioned.NewForConfigOrDie(config)}
}

// WithT is the same handle reporting to t (a subtest).
func (w *Workflows) WithT(t testing.TB) *Workflows {
	c := *w
	c.T = t
	return &c
}

// InNamespace is the same handle for namespace ns.
func (w *Workflows) InNamespace(ns string) *Workflows {
	c := *w
	c.Namespace = ns
	return &c
}

func (w *Workflows) timeout() time.Duration {
	if w.Timeout == 0 {
		return DefaultTimeout
	}
	return w.Timeout
}

func (w *Workflows) diagnosis() string {
	if w.Diagnose == nil {
		return ""
	}
	return "\n" + w.Diagnose()
}

// ParseWorkflow decodes a workflow manifest (YAML, strictly: an unknown field is an error in the test).
func ParseWorkflow(t testing.TB, manifest string) *wfv1.Workflow {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		t.Fatalf("parsing workflow: %v", err)
	}
	return wf
}

// Submit creates the workflow of manifest (YAML) in the namespace.
func (w *Workflows) Submit(manifest string) *wfv1.Workflow {
	w.T.Helper()
	return w.Create(ParseWorkflow(w.T, manifest))
}

// Create creates wf in the namespace, with Labels added.
func (w *Workflows) Create(wf *wfv1.Workflow) *wfv1.Workflow {
	w.T.Helper()
	if len(w.Labels) > 0 {
		if wf.Labels == nil {
			wf.Labels = map[string]string{}
		}
		maps.Copy(wf.Labels, w.Labels)
	}
	created, err := w.Argo.ArgoprojV1alpha1().Workflows(w.Namespace).Create(w.T.Context(), wf, metav1.CreateOptions{})
	if err != nil {
		w.T.Fatalf("creating workflow %s: %v", wf.Name, err)
	}
	return created
}

// WaitFor waits up to timeout until cond holds for the workflow (its nodes inflated), failing with what
// it never became and its last state. A workflow not found yet is waited for.
func (w *Workflows) WaitFor(name, what string, timeout time.Duration, cond func(*wfv1.Workflow) bool) *wfv1.Workflow {
	w.T.Helper()
	var last *wfv1.Workflow
	err := wait.PollUntilContextTimeout(w.T.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		wf, err := w.Argo.ArgoprojV1alpha1().Workflows(w.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if err := extstatus.InflateNodes(wf); err != nil {
			return false, fmt.Errorf("inflating the nodes of workflow %s: %w", name, err)
		}
		last = wf
		return cond(wf), nil
	})
	if err != nil {
		w.T.Fatalf("workflow %s/%s never %s: %v\n%s%s", w.Namespace, name, what, err, Describe(last), w.diagnosis())
	}
	return last
}

// WaitCompleted waits until the workflow has completed (any final phase) and returns it.
func (w *Workflows) WaitCompleted(name string) *wfv1.Workflow {
	w.T.Helper()
	return w.WaitFor(name, "completed", w.timeout(), func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
}

// Describe is the workflow's phase and message and a line per node (sorted by name) for a failure message.
func Describe(wf *wfv1.Workflow) string {
	if wf == nil {
		return "<no workflow>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s message=%q\n", wf.Status.Phase, wf.Status.Message)
	for _, n := range SortedNodes(wf) {
		fmt.Fprintf(&b, "  %-34s %-9s %-10s synced=%s msg=%q inputs=%s outputs=%s\n",
			n.Name, n.Type, n.Phase, OptionalBool(n.TaskResultSynced), n.Message, n.Inputs, n.Outputs)
	}
	return b.String()
}

// OptionalBool prints an optional status flag: its value, or nil when unset.
func OptionalBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// SortedNodes are the workflow's nodes sorted by name.
func SortedNodes(wf *wfv1.Workflow) []wfv1.NodeStatus {
	nodes := slices.Collect(maps.Values(wf.Status.Nodes))
	slices.SortFunc(nodes, func(a, b wfv1.NodeStatus) int { return strings.Compare(a.Name, b.Name) })
	return nodes
}

// NodeByName is the workflow's node with that (full) name, nil when it has none.
func NodeByName(wf *wfv1.Workflow, name string) *wfv1.NodeStatus {
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return &n
		}
	}
	return nil
}

// Node is NodeByName, failing the test when the workflow has no such node.
func (w *Workflows) Node(wf *wfv1.Workflow, name string) *wfv1.NodeStatus {
	w.T.Helper()
	n := NodeByName(wf, name)
	if n == nil {
		w.T.Fatalf("workflow %s has no node %s\n%s", wf.Name, name, Describe(wf))
	}
	return n
}

// PodOf is the pod the controller created for the node (matched by its node-id annotation).
func (w *Workflows) PodOf(wf *wfv1.Workflow, nodeName string) *corev1.Pod {
	w.T.Helper()
	n := w.Node(wf, nodeName)
	pods, err := w.Kube.CoreV1().Pods(w.Namespace).List(w.T.Context(), metav1.ListOptions{})
	if err != nil {
		w.T.Fatalf("listing the pods of %s: %v", w.Namespace, err)
	}
	for i := range pods.Items {
		if pods.Items[i].Annotations[common.AnnotationKeyNodeID] == n.ID {
			return &pods.Items[i]
		}
	}
	w.T.Fatalf("no pod for node %s (%s)%s", nodeName, n.ID, w.diagnosis())
	return nil
}

// Events are the namespace's Events with reason about the object kind/name (of any kind when kind is "").
func (w *Workflows) Events(kind, name, reason string) []corev1.Event {
	w.T.Helper()
	events, err := w.events(w.T.Context(), kind, name, reason)
	if err != nil {
		w.T.Fatal(err)
	}
	return events
}

func (w *Workflows) events(ctx context.Context, kind, name, reason string) ([]corev1.Event, error) {
	list, err := w.Kube.CoreV1().Events(w.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the Events of %s/%s: %w", w.Namespace, name, err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if (kind == "" || ev.InvolvedObject.Kind == kind) && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out, nil
}

// WaitEvent waits until there is at least one Event Events would return (recorders write them
// asynchronously) and returns them.
func (w *Workflows) WaitEvent(kind, name, reason string) []corev1.Event {
	w.T.Helper()
	var got []corev1.Event
	var listErr error
	err := wait.PollUntilContextTimeout(w.T.Context(), pollInterval, w.timeout(), true, func(ctx context.Context) (bool, error) {
		got, listErr = w.events(ctx, kind, name, reason)
		return len(got) > 0, nil
	})
	if err != nil {
		if kind == "" {
			kind = "object"
		}
		w.T.Fatalf("%s %s/%s has no %s Event: %v (last list error: %v)", kind, w.Namespace, name, reason, err, listErr)
	}
	return got
}

// Messages are the events' messages, in order.
func Messages(events []corev1.Event) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		out = append(out, ev.Message)
	}
	return out
}

// Metric is Metric over w.Metrics.
func (w *Workflows) Metric(name string, labels map[string]string) float64 {
	w.T.Helper()
	if w.Metrics == nil {
		w.T.Fatalf("reading metric %s: the Workflows has no Metrics", name)
	}
	return Metric(w.T, w.Metrics, name, labels)
}

// Metric is the value of the counter or gauge name (for a histogram, its sample count) summed over the
// series whose labels include labels.
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
					continue series
				}
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

// Until waits up to timeout until cond holds, failing with what never happened.
func Until(t testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	}); err != nil {
		t.Fatalf("never %s: %v", what, err)
	}
}

// ModuleRoot is the root of the module the test runs in (where config/ and bin/ are).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// ReadManifest decodes the one-object YAML file at path (relative to the module root) into obj.
func ReadManifest(t testing.TB, path string, obj any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ModuleRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, obj); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
}

// As is config impersonating user (authenticated, in groups, with extra: e.g. a token's pod claims), so
// that a client has only the roles bound to that identity.
func As(config *rest.Config, user string, groups []string, extra map[string][]string) *rest.Config {
	c := rest.CopyConfig(config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(slices.Clone(groups), "system:authenticated"), Extra: extra}
	return c
}

// AsServiceAccount is config impersonating ServiceAccount sa of namespace ns (extra: its token's claims).
func AsServiceAccount(config *rest.Config, ns, sa string, extra map[string][]string) *rest.Config {
	return As(config, "system:serviceaccount:"+ns+":"+sa, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, extra)
}

// Grant binds a Role of rules in namespace ns to user and returns config impersonating that user, once the
// API server's authorizer allows the first rule's first verb (it learns of a binding asynchronously).
func Grant(t testing.TB, config *rest.Config, ns, user string, rules ...rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(config)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the role of %s: %v", user, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding the role of %s: %v", user, err)
	}
	as := As(config, user, nil, nil)
	first := rules[0]
	if err := controlplanetest.WaitAuthorized(t.Context(), as, authorizationv1.ResourceAttributes{
		Verb: first.Verbs[0], Group: first.APIGroups[0], Resource: first.Resources[0], Namespace: ns}); err != nil {
		t.Fatalf("waiting until %s may %s %s: %v", user, first.Verbs[0], first.Resources[0], err)
	}
	return as
}

// Grant is Grant in the Workflows' namespace.
func (w *Workflows) Grant(config *rest.Config, user string, rules ...rbacv1.PolicyRule) *rest.Config {
	w.T.Helper()
	return Grant(w.T, config, w.Namespace, user, rules...)
}

// BindExecutorRole installs config/rbac's executor ClusterRole and binds it to ServiceAccount default of
// namespace ns, as an install does for each workflow namespace, and waits until the binding is in force.
func BindExecutorRole(t testing.TB, config *rest.Config, ns string) {
	t.Helper()
	BindExecutorRoleTo(t, config, ns, "default")
}

// BindExecutorRoleTo binds config/rbac's executor ClusterRole to ServiceAccount sa of namespace ns, once the
// authorizer allows it to create task results there.
func BindExecutorRoleTo(t testing.TB, config *rest.Config, ns, sa string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(config)
	role := &rbacv1.ClusterRole{}
	ReadManifest(t, "config/rbac/executor_role.yaml", role)
	if _, err := kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "wfguard-executor-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding the executor role to %s in %s: %v", sa, ns, err)
	}
	if err := controlplanetest.WaitAuthorized(t.Context(), AsServiceAccount(config, ns, sa, nil), authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
}

// ControllerServiceAccount is the identity AsController gives the controller under test.
const ControllerServiceAccount = "system:serviceaccount:wfguard-system:wfguard-controller"

// AsController installs config/rbac's controller ClusterRole, binds it cluster-wide to
// ControllerServiceAccount, and returns config impersonating that ServiceAccount once the binding is in
// force: a controller started with it has exactly the access an install gives it, so admission policies
// that ask the authorizer about the requester see the controller as they would in a cluster.
func AsController(t testing.TB, config *rest.Config) *rest.Config {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(config)
	role := &rbacv1.ClusterRole{}
	ReadManifest(t, "config/rbac/controller_role.yaml", role)
	if _, err := kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		existing, gerr := kube.RbacV1().ClusterRoles().Get(t.Context(), role.Name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		role.ResourceVersion = existing.ResourceVersion
		_, err = kube.RbacV1().ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("updating ClusterRole %s: %v", role.Name, err)
		}
	} else if err != nil {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	ns, name := "wfguard-system", "wfguard-controller"
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "wfguard-controller-under-test"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("binding ClusterRole %s: %v", role.Name, err)
	}
	as := AsServiceAccount(config, ns, name, nil)
	if err := controlplanetest.WaitAuthorized(t.Context(), as, authorizationv1.ResourceAttributes{
		Verb: "watch", Group: "argoproj.io", Resource: "workflows"}); err != nil {
		t.Fatal(err)
	}
	return as
}
