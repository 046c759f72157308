package trust

import (
	"context"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

const policyFile = "config/policy/executor-writes-own-taskresult.yaml"

const held = `
metadata: {name: held}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: s1, template: work}
    - - {name: approve, template: approve}
  - name: work
    container: {image: alpine, command: [echo, hi]}
  - name: approve
    suspend: {}
`

// Issue #14 item 9: the executor role lets any pod create and patch every task result in its namespace.
// With config/policy's admission policy, a ServiceAccount writes only the result of its own pod's node:
// the workflow's real executor reports through it, and every hostile write, made with a pod-bound
// ServiceAccount identity holding only the executor role, is refused.
func TestAPodsServiceAccountWritesOnlyItsOwnNodesTaskResult(t *testing.T) {
	e := newEnv(t, envOptions{executorAsServiceAccount: true})
	e.installExecutorPolicy()
	results := func(claims map[string][]string) versioned.Interface {
		return versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", claims))
	}
	unbound := results(nil)

	wf := e.Submit(held)
	wf = e.WaitFor(wf.Name, "suspended after s1 reported through the policy", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		s1, approve := harness.NodeByName(wf, "held[0].s1"), harness.NodeByName(wf, "held[1].approve")
		return s1 != nil && s1.Phase == wfv1.NodeSucceeded && approve != nil && approve.Phase == wfv1.NodeRunning
	})
	s1 := harness.NodeByName(wf, "held[0].s1")
	pod := e.PodOf(wf, "held[0].s1")
	own := results(simnode.PodClaims(pod.Name, string(pod.UID)))
	// A pod of another node of the same workflow (its name shares the workflow prefix, not the hash).
	neighbour := results(simnode.PodClaims(wf.Name+"-work-1", "uid-neighbour"))
	future := wf.NodeID("held[2].later")
	result := func(name string) *wfv1.WorkflowTaskResult {
		return &wfv1.WorkflowTaskResult{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels:          map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyReportOutputsCompleted: "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID}}},
			NodeResult: wfv1.NodeResult{Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("FORGED")}}}},
		}
	}
	create := func(c versioned.Interface, r *wfv1.WorkflowTaskResult) error {
		_, err := c.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), r, metav1.CreateOptions{})
		return err
	}
	patch := func(c versioned.Interface, name, body string) error {
		_, err := c.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	for _, tc := range []struct {
		sentence string
		write    func() error
		refusal  string // "" when allowed
	}{
		{"a token without pod claims may not create a result its account is not stamped on (the stamp policy is not installed here)",
			func() error { return create(unbound, result(future)) }, "not bound to a pod may write a workflowtaskresult only stamped"},
		{"a token without pod claims may not write in another namespace than its account's, even where RBAC lets it", func() error {
			return create(foreignAccount(t, e.Namespace), result(future))
		}, "only in its own namespace"},
		{"a pod may not pre-create the result of a node it does not run", func() error { return create(own, result(future)) },
			"may write only the task result of its own node"},
		{"another node's pod may not patch a result, not even with an empty patch that would disclose it", func() error {
			return patch(neighbour, s1.ID, `{}`)
		}, "may write only the task result of its own node"},
		{"a pod may not move its own result to another workflow", func() error {
			return patch(own, s1.ID, `{"metadata":{"labels":{"workflows.argoproj.io/workflow":"other"}}}`)
		}, "may write only the task result of its own node"},
		{"a pod may not change the owner of its own result", func() error {
			return patch(own, s1.ID, `{"metadata":{"ownerReferences":[{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","name":"held","uid":"other-uid"}]}}`)
		}, "may not change"},
		{"a result must be owned by the workflow it is labelled for", func() error {
			r := result(wf.Name)
			r.OwnerReferences[0].Name = "other"
			return create(results(simnode.PodClaims(wf.Name, "uid-root")), r)
		}, "must be owned by the Workflow"},
		{"a pod may patch its own node's result", func() error { return patch(own, s1.ID, `{}`) }, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			err := tc.write()
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), tc.refusal)):
				t.Errorf("err = %v, want Forbidden ...%q", err, tc.refusal)
			}
		})
	}
	if r, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Get(t.Context(), s1.ID, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if r.Labels[common.LabelKeyWorkflow] != wf.Name || r.OwnerReferences[0].UID != wf.UID {
		t.Errorf("s1's result was changed: labels %v, owners %v", r.Labels, r.OwnerReferences)
	}
}

// probeResult is a task result of workflow "probe" for admission probes.
var probeResult = &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: "probe-1",
	Labels:          map[string]string{common.LabelKeyWorkflow: "probe"},
	OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "probe", UID: "u"}}}}

// installExecutorPolicy binds the executor role in the env's namespace and installs config/policy's
// task-result policy there, waiting until admission refuses a token without pod claims (which only the
// stamp policy, not installed here, would let write as its account).
func (e *env) installExecutorPolicy() {
	e.t.Helper()
	harness.BindExecutorRole(e.t, cp.Config(), e.Namespace)
	harness.InstallPolicy(e.t, cp.Config(), policyFile, e.Namespace)
	unbound := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", nil))
	e.waitAdmission("a token without pod claims", func(ctx context.Context, dryRun metav1.CreateOptions) error {
		_, err := unbound.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(ctx, probeResult, dryRun)
		return err
	}, "not bound to a pod may write a workflowtaskresult only stamped")
}

// foreignAccount is ServiceAccount default of namespace elsewhere, without pod claims, bound to the executor
// role in ns.
func foreignAccount(t *testing.T, ns string) versioned.Interface {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "wfguard-executor-elsewhere"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "wfguard-executor"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "elsewhere"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := harness.AsServiceAccount(cp.Config(), "elsewhere", "default", nil)
	if err := controlplanetest.WaitAuthorized(t.Context(), config, authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	return versioned.NewForConfigOrDie(config)
}
