package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/test/harness"
)

// keygenItems is the loop's length: at the 0.6 CPU-second an RSA-4096 key took here, one pass of it cost
// two minutes of a worker before the fix, and every later pass as much again.
const keygenItems = 200

const keygenSteps = `
metadata: {name: keygen-steps}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: key
        template: work
        withSequence: {count: "%d"}
        arguments: {parameters: [{name: key, value: "{{=sprig.genPrivateKey('rsa') + item}}"}]}
` + keygenWork

const keygenDAG = `
metadata: {name: keygen-dag}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - name: key
        template: work
        withSequence: {count: "%d"}
        arguments: {parameters: [{name: key, value: "{{=sprig.genPrivateKey('rsa') + item}}"}]}
` + keygenWork

// keygenWork is the template each item would run.
const keygenWork = `
  - name: work
    inputs: {parameters: [{name: key}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.key}}"]}
`

// Issue #44 item 10: anyone who may create a workflow writes its expressions, and the controller pays for
// them in every pass, once per loop item. sprig's key generators are denied: a loop over one ends in its
// first pass, naming the function, and costs no worker its minutes.
func TestALoopOverAKeyGeneratorEndsAtOnceNamingItWhileAnotherWorkflowSucceeds(t *testing.T) {
	e := newEnv(t, envOptions{})
	mallory := versioned.NewForConfigOrDie(e.Grant(cp.Config(), "mallory", rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group},
		Resources: []string{"workflows"}, Verbs: []string{"create"}}))
	submitted := time.Now()
	for _, manifest := range []string{keygenSteps, keygenDAG} {
		wf := harness.ParseWorkflow(t, fmt.Sprintf(manifest, keygenItems))
		if _, err := mallory.ArgoprojV1alpha1().Workflows(e.Namespace).Create(t.Context(), wf, metav1.CreateOptions{}); err != nil {
			t.Fatalf("mallory submitting %s: %v", wf.Name, err)
		}
	}
	beside := e.Submit(oneStep)
	for _, tc := range []struct {
		sentence string
		workflow string
		phase    wfv1.WorkflowPhase // argo's for an errored step group (Failed) and an errored DAG task (Error)
		node     string             // the node whose message names the function
	}{
		{"a steps loop ends Failed with its group's message naming sprig.genPrivateKey", "keygen-steps", wfv1.WorkflowFailed, "keygen-steps[0]"},
		{"a DAG loop ends Error with its task's message naming sprig.genPrivateKey", "keygen-dag", wfv1.WorkflowError, "keygen-dag.key"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			done := e.WaitFor(tc.workflow, "completed", 30*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
			t.Logf("%s ended %s %s after submission", tc.workflow, done.Status.Phase, time.Since(submitted).Round(time.Millisecond))
			msg := e.Node(done, tc.node).Message
			if done.Status.Phase != tc.phase || !strings.Contains(msg, "sprig.genPrivateKey is not available in wfguard's expressions") ||
				!strings.Contains(msg, "docs/engine.md") {
				t.Fatalf("%s ended %s with node %s %q; want %s naming the function and the docs\n%s", tc.workflow, done.Status.Phase, tc.node, msg, tc.phase, harness.Describe(done))
			}
			pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + tc.workflow})
			if err != nil || len(pods.Items) != 0 {
				t.Fatalf("%s has %d pods (%v), want none", tc.workflow, len(pods.Items), err)
			}
		})
	}
	if got := e.WaitCompleted(beside.Name); got.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the workflow beside them ended %s\n%s", got.Status.Phase, harness.Describe(got))
	}
}
