//go:build realnode

package e2ereal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/test/harness"
)

// Issue #46: argo's documented hardening. The pods run as "worker", which may do nothing, with their own
// token turned off (automountServiceAccountToken: false); argoexec runs as the executor ServiceAccount
// "reporter", the only one bound to the executor role, through its token Secret
// reporter.service-account-token (the name argo looks for; on Kubernetes >= 1.24 an administrator creates
// it). The real argoexec writes the task result, so it used reporter's token; main has no token at all.
// config/default's task-result policies are installed: the token has no pod claims, so the result is
// stamped with the account, and it decides the node because the pod runs argoexec as that account.
func TestRealExecutorWritesItsResultWithTheExecutorServiceAccountsToken(t *testing.T) {
	e := newEnv(t, controller.Options{})
	for _, name := range []string{"worker", "reporter"} {
		if _, err := e.Kube.CoreV1().ServiceAccounts(e.Namespace).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	harness.BindExecutorRoleTo(t, cp.Config(), e.Namespace, "reporter")
	e.createTokenSecret("reporter")
	e.installTaskResultPolicies("reporter")
	wf := e.Submit(`
metadata: {name: hardened}
spec:
  entrypoint: produce
  serviceAccountName: worker
  automountServiceAccountToken: false
  executor: {serviceAccountName: reporter}
  templates:
  - name: produce
    script:
      image: busybox:1.35
      command: [sh]
      source: |
        test -e /var/run/secrets/kubernetes.io/serviceaccount/token && echo -n main-has-a-token > /tmp/state || echo -n main-has-no-token > /tmp/state
    outputs:
      parameters:
      - name: state
        valueFrom: {path: /tmp/state}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase %s %q, want Succeeded\n%s\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done), e.describePods())
	}
	if got := parameter(e.taskResult(done, "hardened").Outputs, "state"); got != "main-has-no-token" {
		t.Errorf("argoexec's task result has parameter state %q, want main-has-no-token", got)
	}
	if got := parameter(e.Node(done, "hardened").Outputs, "state"); got != "main-has-no-token" {
		t.Errorf("the node's parameter state = %q, want main-has-no-token", got)
	}
	if a := e.taskResult(done, "hardened").Annotations; a[taskresult.AnnotationWriterServiceAccount] != "reporter" || a[taskresult.AnnotationWriterPodName] != "" {
		t.Errorf("the task result is stamped %v, want the account reporter and no pod", a)
	}
	e.waitFinalizersReleased()
}

// installTaskResultPolicies installs config/policy's task-result policies for the namespace and waits until
// admission stamps a dry-run result written by account's token (no pod claims) with the account.
func (e *env) installTaskResultPolicies(account string) {
	e.t.Helper()
	for _, file := range []string{"config/policy/executor-writes-own-taskresult.yaml", "config/policy/taskresult-writer-stamp.yaml"} {
		harness.InstallPolicy(e.t, cp.Config(), file, e.Namespace)
	}
	writer := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, account, nil))
	probe := &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: "probe-1",
		Labels:          map[string]string{common.LabelKeyWorkflow: "probe"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "probe", UID: "u"}}}}
	harness.Until(e.t, "the task-result policies admitting and stamping "+account+"'s writes", harness.DefaultTimeout, func(ctx context.Context) bool {
		r, err := writer.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && r.Annotations[taskresult.AnnotationWriterServiceAccount] == account
	})
}

// createTokenSecret creates the kubernetes.io/service-account-token Secret <sa>.service-account-token that
// argo's documentation asks for. The test control plane runs no token controller, so the Secret is filled
// as that controller would: a token of the account, the cluster's CA, the namespace.
func (e *env) createTokenSecret(sa string) {
	e.t.Helper()
	token, err := e.Kube.CoreV1().ServiceAccounts(e.Namespace).CreateToken(e.t.Context(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("requesting a token of %s: %v", sa, err)
	}
	var ca string
	if err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := e.Kube.CoreV1().ConfigMaps(e.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			ca = cm.Data["ca.crt"]
		}
		return strings.Contains(ca, "CERTIFICATE"), nil
	}); err != nil {
		e.t.Fatalf("the namespace's kube-root-ca.crt was never published: %v", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: sa + ".service-account-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type:       corev1.SecretTypeServiceAccountToken,
		StringData: map[string]string{corev1.ServiceAccountTokenKey: token.Status.Token, corev1.ServiceAccountRootCAKey: ca, corev1.ServiceAccountNamespaceKey: e.Namespace},
	}
	if _, err := e.Kube.CoreV1().Secrets(e.Namespace).Create(e.t.Context(), secret, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating the token Secret of %s: %v", sa, err)
	}
}
