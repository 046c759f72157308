package trust

import (
	"context"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

const twoSteps = `
metadata: {name: victim}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: s1, template: work}
    - - {name: s2, template: work}
  - name: work
    container: {image: alpine, command: [echo, hi]}
`

// Issue #14 item 1: a user who may only create pods in namespace B makes a pod there that claims a node
// of a workflow in namespace A (owner UID, labels, node-id annotation, our finalizer). The pod decides
// nothing: the workflow runs on its own pods, the pod keeps its finalizer, and the controller says why.
func TestAPodInAnotherNamespaceDecidesNoNodeAndKeepsItsFinalizer(t *testing.T) {
	e := newEnv(t, envOptions{})
	other, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "trust-b")
	if err != nil {
		t.Fatal(err)
	}
	// mallory may create pods in the other namespace, and nothing else.
	if _, err := e.Kube.RbacV1().Roles(other).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-creator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kube.RbacV1().RoleBindings(other).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory-creates-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-creator"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "mallory", APIGroup: "rbac.authorization.k8s.io"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := controlplanetest.WaitAuthorized(t.Context(), harness.As(cp.Config(), "mallory", nil, nil),
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: other}); err != nil {
		t.Fatal(err)
	}
	mallory := kubernetes.NewForConfigOrDie(harness.As(cp.Config(), "mallory", nil, nil))

	wf := e.Submit(twoSteps)
	e.WaitFor(wf.Name, "ran s1", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, "victim[0].s1") != nil })
	// The pod claims the workflow's root node (its ID is the workflow's name) and carries our finalizer:
	// taken for the workflow's own, it would be released when the workflow completes.
	fake := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "victim-fake",
			Labels: map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyControllerInstanceID: e.instance,
				common.LabelKeyCompleted: "false"},
			Annotations:     map[string]string{common.AnnotationKeyNodeID: wf.NodeID(wf.Name)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID}},
			Finalizers:      []string{podfinalizer.Finalizer},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
	}
	fake, err = mallory.CoreV1().Pods(other).Create(t.Context(), fake, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("mallory creating the pod in %s: %v", other, err)
	}
	t.Cleanup(func() { releaseByAdmin(t, e, fake) })

	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("phase = %s (%s), want Succeeded", done.Status.Phase, done.Status.Message)
	}
	// The release Event follows the patches of the same pass: once it is there, the pass released all
	// it was going to.
	e.WaitEvent("Workflow", wf.Name, "PodFinalizersReleased")
	for _, node := range []string{"victim[0].s1", "victim[1].s2"} {
		if pod := e.PodOf(done, node); slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
			t.Errorf("the workflow's own pod of %s still holds the finalizer", node)
		}
	}
	got, err := e.Kube.CoreV1().Pods(other).Get(t.Context(), fake.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, podfinalizer.Finalizer) {
		t.Errorf("the controller released the finalizer of mallory's pod in %s", other)
	}
	msgs := harness.Messages(e.InNamespace(other).WaitEvent("Pod", fake.Name, "PodIgnored"))
	t.Logf("PodIgnored: %v", msgs)
	if n := e.Metric("wfguard_pods_ignored_total", map[string]string{"reason": "other_namespace"}); n != 1 {
		t.Errorf("wfguard_pods_ignored_total{reason=other_namespace} = %v, want 1", n)
	}
}

// releaseByAdmin removes the finalizer the test's hostile pod carries, so its namespace can go.
func releaseByAdmin(t *testing.T, e *env, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Logf("releasing %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}
