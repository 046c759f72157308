package trust

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

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

// env is a cluster-wide controller for one instance ID, a simulated node for the workflow namespace, and
// the namespace itself.
type env struct {
	t        *testing.T
	ns       string
	instance string
	kube     kubernetes.Interface
	argo     versioned.Interface
	registry *prometheus.Registry
}

type envOptions struct {
	// executorAsServiceAccount makes the simulated executor write results as the pod's ServiceAccount,
	// with the pod claims of a pod-bound token.
	executorAsServiceAccount bool
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ns := harness.Namespace(t, cp.Config(), "trust")
	e := &env{t: t, ns: ns, instance: ns, kube: kubernetes.NewForConfigOrDie(cp.Config()),
		argo: versioned.NewForConfigOrDie(cp.Config())}
	run := harness.Start(t, cp.Config(), controller.Options{
		Namespace: "", InstanceID: e.instance, Workers: 4, StatusFinalizer: true,
		Validate: controller.ArgoValidator(e.argo), Logger: harness.Logger(t),
	}, simnode.Options{Namespace: ns, ImpersonateServiceAccount: o.executorAsServiceAccount})
	e.registry = run.Controller.Registry()
	return e
}

// submit creates the workflow in manifest (YAML), labelled for this env's controller instance.
func (e *env) submit(manifest string) *wfv1.Workflow {
	e.t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		e.t.Fatalf("parsing workflow: %v", err)
	}
	wf.Labels = map[string]string{common.LabelKeyControllerInstanceID: e.instance}
	created, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Create(e.t.Context(), wf, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating workflow: %v", err)
	}
	return created
}

// waitFor waits until cond holds for the workflow.
func (e *env) waitFor(name, what string, cond func(*wfv1.Workflow) bool) *wfv1.Workflow {
	e.t.Helper()
	var last *wfv1.Workflow
	err := wait.PollUntilContextTimeout(e.t.Context(), 25*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		wf, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = wf
		return cond(wf), nil
	})
	if err != nil {
		e.t.Fatalf("workflow %s never %s: %v\nlast: %+v", name, what, err, last.Status)
	}
	return last
}

func nodeByName(wf *wfv1.Workflow, name string) *wfv1.NodeStatus {
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return &n
		}
	}
	return nil
}

// podOf returns the pod the controller created for a node.
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
		if pods.Items[i].Annotations[common.AnnotationKeyNodeID] == n.ID {
			return &pods.Items[i]
		}
	}
	e.t.Fatalf("no pod for node %s", nodeName)
	return nil
}

func mainArgs(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == "main" {
			return strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		}
	}
	return ""
}

// metric sums a counter over the label sets that match labels.
func (e *env) metric(name string, labels map[string]string) float64 {
	e.t.Helper()
	families, err := e.registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue metrics
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// events returns the messages of the Events with reason on the named object in namespace.
func (e *env) events(namespace, kind, name, reason string) []string {
	e.t.Helper()
	list, err := e.kube.CoreV1().Events(namespace).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && ev.Reason == reason {
			got = append(got, ev.Message)
		}
	}
	return got
}

// waitEvent waits for an Event with reason on the named object in namespace and returns its messages.
func (e *env) waitEvent(namespace, kind, name, reason string) []string {
	e.t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = e.events(namespace, kind, name, reason)
		return len(got) > 0, nil
	})
	if err != nil {
		e.t.Fatalf("%s %s/%s has no %s Event", kind, namespace, name, reason)
	}
	return got
}

// as is a client config for an impersonated identity with only the roles bound to it.
func as(user string, groups []string, extra map[string][]string) *rest.Config {
	c := cp.Config()
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated"), Extra: extra}
	return c
}

// serviceAccount is the identity of ServiceAccount sa in namespace ns (extra: its token's pod claims).
func serviceAccount(ns, sa string, extra map[string][]string) *rest.Config {
	return as("system:serviceaccount:"+ns+":"+sa, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, extra)
}

// bindExecutorRole installs config/rbac's executor ClusterRole and binds it to ServiceAccount default in
// the env's namespace, as an install does for each workflow namespace.
func (e *env) bindExecutorRole() {
	e.t.Helper()
	role := &rbacv1.ClusterRole{}
	readManifest(e.t, "config/rbac/executor_role.yaml", role)
	if _, err := e.kube.RbacV1().ClusterRoles().Create(e.t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	if _, err := e.kube.RbacV1().RoleBindings(e.ns).Create(e.t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "wfguard-executor-default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: e.ns}},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if err := controlplanetest.WaitAuthorized(e.t.Context(), serviceAccount(e.ns, "default", nil), authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: e.ns}); err != nil {
		e.t.Fatal(err)
	}
}

// readManifest decodes the one-object YAML file at path (relative to the module root) into obj.
func readManifest(t *testing.T, path string, obj any) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, obj); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
}
