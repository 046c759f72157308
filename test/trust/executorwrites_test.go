package trust

import (
	"context"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/test/harness"
)

// producer (named %s) has one step, work, whose output parameter out its pod reports; its argoexec runs as
// the executor ServiceAccount %s, the pod's own token off (argo's hardening), or as the pod's own account
// when the executor line is left out.
const producer = `
metadata: {name: %s}
spec:
  entrypoint: main
%s
  templates:
  - name: main
    steps: [[{name: work, template: produce}]]
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo real > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`

// producerAwaitingApproval is producer whose work is followed by a suspend step: the workflow stays Running,
// so its task results stay (the controller deletes a completed workflow's, as argo does).
var producerAwaitingApproval = strings.Replace(producer, "    steps: [[{name: work, template: produce}]]",
	"    steps: [[{name: work, template: produce}], [{name: approve, template: approve}]]\n  - {name: approve, suspend: {}}", 1)

// workReported waits until the workflow's work node has Succeeded with its reported output, its workflow
// still waiting for the approval.
func (e *env) workReported(name string) (*wfv1.Workflow, *wfv1.NodeStatus) {
	e.t.Helper()
	wf := e.WaitFor(name, "work reported", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, name+"[0].work")
		return wf.Status.Phase.Completed() || (n != nil && n.Phase == wfv1.NodeSucceeded)
	})
	work := e.Node(wf, name+"[0].work")
	if wf.Status.Phase.Completed() || outputOf(work) != "real" {
		e.t.Fatalf("workflow %s %q, work %s with output %q; want work Succeeded with real, the workflow awaiting approval\n%s",
			wf.Status.Phase, wf.Status.Message, work.Phase, outputOf(work), harness.Describe(wf))
	}
	return wf, work
}

// runsAs is producer's executor lines for account ("" none).
func runsAs(account string) string {
	if account == "" {
		return ""
	}
	return "  automountServiceAccountToken: false\n  executor: {serviceAccountName: " + account + "}"
}

// accountsEnv is a namespace with both task-result policies of config/default, the executor role bound to
// default (the pods' own account) and to the executor ServiceAccounts reporter and other, whose token
// Secrets the simulated kubelet mounts for argoexec. Workflows named held-* hold their pod before it
// writes its result, until release.
func accountsEnv(t *testing.T) (e *env, release func()) {
	t.Helper()
	gate := make(chan struct{})
	release = func() { closeOnce(gate) }
	t.Cleanup(release)
	e = newEnv(t, envOptions{executorAsServiceAccount: true, script: simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		b := simnode.Behavior{Parameters: map[string]string{"out": "real"}}
		if strings.HasPrefix(info.WorkflowName, "held-") {
			b.HoldBeforeResult = gate
		}
		return b
	}}})
	e.installExecutorPolicy()
	harness.InstallPolicy(t, cp.Config(), stampPolicyFile, e.Namespace)
	e.waitStamped()
	for _, sa := range []string{"reporter", "other"} {
		if _, err := e.Kube.CoreV1().ServiceAccounts(e.Namespace).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The Secret an administrator creates for the account (argo's documentation); the test control plane
		// fills no token in it, the simulated kubelet only reads whose it is.
		if _, err := e.Kube.CoreV1().Secrets(e.Namespace).Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: sa + ".service-account-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.BindExecutorRoleTo(t, cp.Config(), e.Namespace, sa)
	}
	return e, release
}

// Issue #46: with config/default's task-result policies installed, argo's executor.serviceAccountName
// hardening works: argoexec writes with the executor account's token (no pod claims), the stamp names the
// account, and the result decides its node. Before, the executor policy refused every write by a token
// without pod claims and the node ended Error.
func TestAnExecutorAccountsTokenWritesTheResultOfItsOwnNode(t *testing.T) {
	e, _ := accountsEnv(t)
	wf := e.Submit(manifestWith(producerAwaitingApproval, "hardened", runsAs("reporter")))
	_, work := e.workReported(wf.Name)
	r, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Get(t.Context(), work.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Annotations; a[taskresult.AnnotationWriterServiceAccount] != "reporter" || a[taskresult.AnnotationWriterPodName] != "" || a[taskresult.AnnotationWriterPodUID] != "" {
		t.Errorf("the result is stamped %v, want the account reporter and no pod", a)
	}
}

// Issue #46: an executor account's token can write a result for any node of its namespace (RBAC cannot
// narrow it), but it decides only a node whose pod the controller created to run argoexec as that account:
// for a node run without an executor account, or with another one, it is ignored (other_account) and the
// node never takes its outputs; the node's own pod may not take over what the account wrote.
func TestAnExecutorAccountsResultDecidesNoNodeRunWithoutThatAccount(t *testing.T) {
	e, release := accountsEnv(t)
	reporter := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "reporter", nil))
	type victim struct {
		wf  *wfv1.Workflow
		pod *corev1.Pod
	}
	var victims []victim
	for _, tc := range []struct{ sentence, name, account string }{
		{"a node whose pod runs argoexec as no executor account", "held-plain", ""},
		{"a node whose pod runs argoexec as another executor account", "held-other", "other"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := e.Submit(manifestWith(producer, tc.name, runsAs(tc.account)))
			node := tc.name + "[0].work"
			wf = e.WaitFor(wf.Name, "work running", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, node)
				return n != nil && n.Phase == wfv1.NodeRunning
			})
			pod := e.PodOf(wf, node)
			if err := e.node.WaitForStep(t.Context(), e.Namespace, pod.Name, simnode.StepRunning); err != nil {
				t.Fatal(err)
			}
			forged := forgedResult(wf, e.instance, e.Node(wf, node).ID)
			forged.Outputs.Parameters[0].Name = "out"
			if _, err := reporter.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), forged, metav1.CreateOptions{}); err != nil {
				t.Fatalf("reporter's token creating %s's result (RBAC and the policy cannot tell its node): %v", node, err)
			}
			harness.Until(t, "the controller reacting to reporter's result", harness.DefaultTimeout, func(ctx context.Context) bool {
				cur, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, wf.Name, metav1.GetOptions{})
				return len(e.Events("Workflow", wf.Name, taskresult.ReasonIgnored)) > 0 ||
					(err == nil && outputOf(harness.NodeByName(cur, node)) == "FORGED")
			})
			if msgs := strings.Join(harness.Messages(e.Events("Workflow", wf.Name, taskresult.ReasonIgnored)), "\n"); !strings.Contains(msgs, forged.Name) ||
				!strings.Contains(msgs, "names a ServiceAccount its node's pod does not run argoexec as") {
				t.Errorf("TaskResultIgnored Events %q, want %s ignored as another account's", msgs, forged.Name)
			}
			own := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims(pod.Name, string(pod.UID))))
			_, err := own.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), forged.Name, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			if refusal := "which ServiceAccount reporter wrote"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refusal) {
				t.Errorf("the node's own pod patching reporter's result: %v, want 403 ...%q", err, refusal)
			}
			victims = append(victims, victim{wf, pod})
		})
	}
	if n := e.Metric("wfguard_taskresult_ignored_total", map[string]string{"reason": taskresult.IgnoredOtherAccount}); n < 2 {
		t.Errorf("wfguard_taskresult_ignored_total{reason=other_account} = %v, want >= 2", n)
	}
	release()
	for _, v := range victims {
		done := e.WaitCompleted(v.wf.Name)
		if work := e.Node(done, v.wf.Name+"[0].work"); done.Status.Phase == wfv1.WorkflowSucceeded || outputOf(work) == "FORGED" {
			t.Errorf("%s = %s, work %s with output %q; want work failed without reporter's output\n%s", v.wf.Name, done.Status.Phase,
				work.Phase, outputOf(work), harness.Describe(done))
		}
	}
}

// Issue #46: the stamp policy decides the writer stamps, whatever a writer puts there, and the executor
// policy keeps a result with the kind of writer that created it.
func TestTheWriterStampsCannotBeForgedNorAResultTakenOver(t *testing.T) {
	e, _ := accountsEnv(t)
	wf := e.Submit(manifestWith(producerAwaitingApproval, "podwritten", runsAs("")))
	running, work := e.workReported(wf.Name)
	pod := e.PodOf(running, "podwritten[0].work")
	reporter := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "reporter", nil))
	podBound := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims(pod.Name, string(pod.UID))))
	stamps := func(r *wfv1.WorkflowTaskResult) string {
		a := r.Annotations
		return "pod=" + a[taskresult.AnnotationWriterPodName] + " uid=" + a[taskresult.AnnotationWriterPodUID] + " account=" + a[taskresult.AnnotationWriterServiceAccount]
	}
	// forging is the admission probe's result (workflow probe), carrying the stamps given.
	forging := func(pod, uid, account string) *wfv1.WorkflowTaskResult {
		r := probeResult.DeepCopy()
		r.Annotations = map[string]string{taskresult.AnnotationWriterPodName: pod, taskresult.AnnotationWriterPodUID: uid,
			taskresult.AnnotationWriterServiceAccount: account}
		return r
	}
	prober := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims("probe-main-1", "uid-probe")))
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, tc := range []struct {
		sentence string
		write    func() (*wfv1.WorkflowTaskResult, error)
		want     string // the stamps stored; "" when refused
		refusal  string
	}{
		{"an account's token naming a pod and no account is stamped as the account, pod stamps emptied", func() (*wfv1.WorkflowTaskResult, error) {
			return reporter.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), forging(pod.Name, string(pod.UID), ""), dryRun)
		}, "pod= uid= account=reporter", ""},
		{"a pod's token naming an account is stamped as its pod, the account emptied", func() (*wfv1.WorkflowTaskResult, error) {
			return prober.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), forging("", "", "reporter"), dryRun)
		}, "pod=probe-main-1 uid=uid-probe account=", ""},
		{"an account's token may not update a result a pod wrote", func() (*wfv1.WorkflowTaskResult, error) {
			return reporter.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), work.ID, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		}, "", "ServiceAccount reporter may not change task result " + work.ID + ", which it did not write"},
		{"a pod's own token may still update its result", func() (*wfv1.WorkflowTaskResult, error) {
			return podBound.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), work.ID, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		}, "pod=" + pod.Name + " uid=" + string(pod.UID) + " account=", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			r, err := tc.write()
			switch {
			case tc.refusal != "":
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refusal) {
					t.Errorf("err = %v, want 403 ...%q", err, tc.refusal)
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			case stamps(r) != tc.want:
				t.Errorf("stamps %s, want %s", stamps(r), tc.want)
			}
		})
	}
}
