package trust

import (
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/harness"
)

// hardenedStep runs argoexec as the executor ServiceAccount named, the pod's own token off: argo's
// documented hardening, which a platform sets for everyone through workflowDefaults (issue #46).
const hardenedStep = `
metadata: {name: %s}
spec:
  entrypoint: main
  automountServiceAccountToken: false
  executor: {serviceAccountName: %s}
  templates:
  - {name: main, container: {image: alpine, command: ["true"]}}
`

// Issue #46: a workflow with executor.serviceAccountName and automountServiceAccountToken: false runs,
// under the controller's own ClusterRole, with the account's token Secret mounted for argoexec (init and
// wait) and none for main; an account named but missing from the workflow's namespace, even if another
// namespace has it, errors the node with argo's message; the controller reads no other namespace.
func TestAnExecutorServiceAccountsTokenIsMountedForArgoexecOnly(t *testing.T) {
	e := newEnv(t, envOptions{controllerAsServiceAccount: true})
	for _, sa := range []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "executor"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Secrets: []corev1.ObjectReference{{Name: "legacy-token-x7k2p"}}},
	} {
		if _, err := e.Kube.CoreV1().ServiceAccounts(e.Namespace).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "trust-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kube.CoreV1().ServiceAccounts(other).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sentence, name, account string
		wantSecret              string // "": the node errors
		wantMessage             string
	}{
		{"an account without secrets mounts <account>.service-account-token", "plain", "executor", "executor.service-account-token", ""},
		{"an account listing a token Secret mounts it", "listed", "legacy", "legacy-token-x7k2p", ""},
		{"an account of another namespace is missing here", "foreign", "elsewhere", "", `serviceaccounts "elsewhere" not found`},
		{"a missing account errors the node with argo's message", "missing", "ghost", "", `serviceaccounts "ghost" not found`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := e.Submit(manifestWith(hardenedStep, tc.name, tc.account))
			done := e.WaitCompleted(wf.Name)
			if tc.wantSecret == "" {
				n := e.Node(done, done.Name)
				if done.Status.Phase != wfv1.WorkflowError || n.Phase != wfv1.NodeError || n.Message != tc.wantMessage {
					t.Errorf("workflow %s, node %s %q; want both Error, the node saying %q", done.Status.Phase, n.Phase, n.Message, tc.wantMessage)
				}
				return
			}
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("workflow %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
			}
			checkExecutorToken(t, e.PodOf(done, done.Name), tc.wantSecret)
		})
	}
}

// checkExecutorToken asserts the pod's own token is off and the Secret is mounted where argoexec reads
// in-cluster credentials, in init and wait only.
func checkExecutorToken(t *testing.T, pod *corev1.Pod, secret string) {
	t.Helper()
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false", a)
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == common.ServiceAccountTokenVolumeName })
	if i < 0 || pod.Spec.Volumes[i].Secret == nil || pod.Spec.Volumes[i].Secret.SecretName != secret {
		t.Errorf("volumes %+v, want %s from Secret %s", pod.Spec.Volumes, common.ServiceAccountTokenVolumeName, secret)
	}
	var mounting []string
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == common.ServiceAccountTokenMountPath {
				mounting = append(mounting, c.Name+":"+m.Name)
			}
		}
	}
	if want := []string{"init:exec-sa-token", "wait:exec-sa-token"}; !slices.Equal(mounting, want) {
		t.Errorf("mounts at %s: %v, want %v", common.ServiceAccountTokenMountPath, mounting, want)
	}
}

// manifestWith fills each %s of format with the next arg.
func manifestWith(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}
