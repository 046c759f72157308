//go:build realnode

package e2ereal_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
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
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

// env is one test's namespace, with the executor role bound to its default ServiceAccount (as an install
// does) and a wfguard controller for it in this process.
type env struct {
	t    *testing.T
	ns   string
	kube kubernetes.Interface
	argo versioned.Interface
	ctrl *harness.Controller
}

func newEnv(t *testing.T, opts controller.Options) *env {
	t.Helper()
	if unfit != "" {
		t.Skip(unfit)
	}
	ns := harness.Namespace(t, cp.Config(), "real")
	e := &env{t: t, ns: ns, kube: kubernetes.NewForConfigOrDie(cp.Config()), argo: versioned.NewForConfigOrDie(cp.Config())}
	e.bindExecutorRole()
	opts.Namespace, opts.StatusFinalizer = ns, true
	opts.Validate, opts.Logger = controller.ArgoValidator(e.argo), harness.Logger(t)
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	e.ctrl = harness.StartController(t, cp.Config(), opts)
	return e
}

// bindExecutorRole installs config/rbac's executor ClusterRole and binds it to ServiceAccount default.
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
	sa := cp.Config()
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + e.ns + ":default"}
	if err := controlplanetest.WaitAuthorized(e.t.Context(), sa, authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: e.ns}); err != nil {
		e.t.Fatal(err)
	}
}

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

// waitFor waits until cond holds for the workflow, failing with its last state and the node's pods.
func (e *env) waitFor(name, what string, timeout time.Duration, cond func(*wfv1.Workflow) bool) *wfv1.Workflow {
	e.t.Helper()
	var last *wfv1.Workflow
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
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
		e.t.Fatalf("workflow %s never %s: %v\n%s\n%s", name, what, err, describe(last), e.describePods())
	}
	return last
}

// waitCompleted waits for the workflow's end; real pods take seconds each on this machine.
func (e *env) waitCompleted(name string) *wfv1.Workflow {
	e.t.Helper()
	return e.waitFor(name, "completed", 3*time.Minute, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
}

func describe(wf *wfv1.Workflow) string {
	if wf == nil {
		return "<no workflow>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s message=%q\n", wf.Status.Phase, wf.Status.Message)
	for _, n := range sortedNodes(wf) {
		fmt.Fprintf(&b, "  %-34s %-9s %-10s msg=%q outputs=%s\n", n.Name, n.Type, n.Phase, n.Message, n.Outputs)
	}
	return b.String()
}

func (e *env) describePods() string {
	pods, err := e.kube.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%s phase=%s finalizers=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Finalizers)
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s ready=%v state=%+v\n", s.Name, s.Ready, s.State)
		}
	}
	return b.String()
}

func sortedNodes(wf *wfv1.Workflow) []wfv1.NodeStatus {
	var nodes []wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes
}

func nodeNamed(t *testing.T, wf *wfv1.Workflow, name string) wfv1.NodeStatus {
	t.Helper()
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("workflow %s has no node %s\n%s", wf.Name, name, describe(wf))
	return wfv1.NodeStatus{}
}

// podOf is the pod that ran the node (argo's pod name for the node).
func (e *env) podOf(wf *wfv1.Workflow, nodeName string) *corev1.Pod {
	e.t.Helper()
	n := nodeNamed(e.t, wf, nodeName)
	pods, err := e.kube.CoreV1().Pods(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, p := range pods.Items {
		if p.Annotations["workflows.argoproj.io/node-id"] == n.ID {
			return &pods.Items[i]
		}
	}
	e.t.Fatalf("no pod for node %s (%s)\n%s", nodeName, n.ID, e.describePods())
	return nil
}

// logs is what a container of the pod printed, read through the apiserver from the real kubelet.
func (e *env) logs(pod *corev1.Pod, container string) string {
	e.t.Helper()
	stream, err := e.kube.CoreV1().Pods(e.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(e.t.Context())
	if err != nil {
		e.t.Fatalf("reading the logs of %s/%s: %v", pod.Name, container, err)
	}
	defer stream.Close()
	data, err := io.ReadAll(stream)
	if err != nil {
		e.t.Fatalf("reading the logs of %s/%s: %v", pod.Name, container, err)
	}
	return string(data)
}

// programLogs is the container's logs without the emissary's log lines (argoexec
// logs "sub-process exited" with argo=true on the same stream, ordered by time against the program's); the
// emissary's own error ("Error: exit status 1") still follows what the program printed.
func (e *env) programLogs(pod *corev1.Pod, container string) string {
	e.t.Helper()
	var kept []string
	for _, line := range strings.SplitAfter(e.logs(pod, container), "\n") {
		if line != "" && !strings.Contains(line, " argo=true") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

// taskResult is the WorkflowTaskResult argoexec wrote for the node (named after the node ID).
func (e *env) taskResult(wf *wfv1.Workflow, nodeName string) *wfv1.WorkflowTaskResult {
	e.t.Helper()
	n := nodeNamed(e.t, wf, nodeName)
	r, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).Get(e.t.Context(), n.ID, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading the task result of %s: %v", nodeName, err)
	}
	return r
}

// waitFinalizersReleased waits until no pod of the namespace keeps the status finalizer.
func (e *env) waitFinalizersReleased() {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if len(p.Finalizers) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("pods keep their finalizers: %v\n%s", err, e.describePods())
	}
}
