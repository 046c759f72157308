package trust

import (
	"context"
	"maps"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const podPolicyFile = "config/policy/workflow-pods-by-controller.yaml"

// guarded passes produce's output to consume; gate holds the workflow before produce starts.
const guarded = `
metadata: {name: guarded}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gate, template: work}
    - - {name: produce, template: work}
    - - {name: consume, template: report, arguments: {parameters: [{name: answer, value: "{{steps.produce.outputs.parameters.out}}"}]}}
  - name: work
    container: {image: alpine, command: [sh, -c, "echo real > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: report
    inputs: {parameters: [{name: answer}]}
    container: {image: alpine, command: [echo, "answer={{inputs.parameters.answer}}"]}
`

// Issue #44 item 11(a): user mallory, who may create pods in the workflow's namespace, pre-creates the pod of
// a future node with argo's name, labels, node-id annotation and ownerReference; its executor reports a
// forged output for that node. The controller's create of the node's pod found it there and adopted it, so
// the forged output reached the successor. config/policy's pod policy lets only an identity that may create
// workflows/pods (the controller's ClusterRole) create pods labelled with a workflow: mallory's create is
// refused, the controller's own pods are admitted, and the successor gets the real output.
func TestOnlyTheControllerCreatesAWorkflowsPods(t *testing.T) {
	gate := make(chan struct{})
	gateID := (&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}}).NodeID("guarded[0].gate")
	annotated := simnode.AnnotationScript(simnode.Behavior{Parameters: map[string]string{"out": "real"}}, nil)
	e := newEnv(t, envOptions{controllerAsServiceAccount: true, executorAsServiceAccount: true, script: simnode.Script{
		Func: func(info simnode.PodInfo) simnode.Behavior {
			b := annotated.Func(info)
			if info.NodeID == gateID {
				b.Hold = gate
			}
			return b
		}}})
	e.installExecutorPolicy()
	harness.InstallPolicy(t, cp.Config(), podPolicyFile, e.Namespace)
	mallory := kubernetes.NewForConfigOrDie(e.Grant(cp.Config(), "mallory",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}))
	const refusal = "only a workflow controller may create pods labelled workflows.argoproj.io/workflow=guarded"

	wf := e.Submit(guarded)
	wf = e.WaitFor(wf.Name, "running gate", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "guarded[0].gate")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	forged := futurePod(e.PodOf(wf, "guarded[0].gate"), wf, "guarded[1].produce", "work")
	forged.Annotations[simnode.AnnotationParameters] = `{"out":"FORGED"}` // what her pod's main reports
	e.waitAdmission("mallory's pod", func(ctx context.Context, dryRun metav1.CreateOptions) error {
		_, err := mallory.CoreV1().Pods(e.Namespace).Create(ctx, forged, dryRun)
		return err
	}, refusal)

	if _, err := mallory.CoreV1().Pods(e.Namespace).Create(t.Context(), forged, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refusal) {
		t.Errorf("mallory pre-creating %s: %v, want 403 ...%q", forged.Name, err, refusal)
	}
	close(gate)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s (%s), want Succeeded on the controller's own pods\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	produce := e.PodOf(done, "guarded[1].produce")
	if _, hers := produce.Annotations[simnode.AnnotationParameters]; hers {
		t.Errorf("produce ran in mallory's pod %s (annotations %v)", produce.Name, produce.Annotations)
	}
	if args := mainArgs(e.PodOf(done, "guarded[2].consume")); !strings.Contains(args, "answer=real") {
		t.Errorf("consume ran with %q, want produce's real output answer=real", args)
	}
}

// futurePod is the pod a user who may only create pods can make for a node the controller has not started
// yet: a copy of a running pod of the same workflow and template, with the node's name, node-id
// annotation and environment.
func futurePod(running *corev1.Pod, wf *wfv1.Workflow, nodeName, template string) *corev1.Pod {
	id := wf.NodeID(nodeName)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:            podspec.PodName(wf.Name, nodeName, template, id),
		Labels:          maps.Clone(running.Labels),
		Annotations:     maps.Clone(running.Annotations),
		OwnerReferences: running.OwnerReferences,
	}, Spec: *running.Spec.DeepCopy()}
	pod.Annotations[common.AnnotationKeyNodeID] = id
	pod.Annotations[common.AnnotationKeyNodeName] = nodeName
	pod.Spec.NodeName = ""
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if cs[i].Env[j].Name == common.EnvVarNodeID {
					cs[i].Env[j].Value = id
				}
			}
		}
	}
	return pod
}
