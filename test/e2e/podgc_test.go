package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/podgc"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

const gcWorkflow = `
metadata: {name: %s}
spec:
  entrypoint: main
  podGC: {strategy: %s, deleteDelayDuration: "%s"}
  templates:
  - name: main
    steps: [[{name: good, template: ok}, {name: bad, template: fail, continueOn: {failed: true}}]]
  - name: ok
    container: {image: alpine, command: ["true"]}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "1"}}
    container: {image: alpine, command: ["false"]}
`

func (e *env) podNames(ctx context.Context) map[string]corev1.Pod {
	list, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Annotations["workflows.argoproj.io/node-name"]] = p
	}
	return out
}

func TestPodGCDeletesPodsAsTheStrategySaysAfterTheirCaptureIsPersisted(t *testing.T) {
	cases := []struct {
		strategy  string
		remaining []string
	}{
		{"OnPodSuccess", []string{"gc[0].bad"}},
		{"OnPodCompletion", nil},
		{"OnWorkflowCompletion", nil},
		{"OnWorkflowSuccess", nil},
	}
	for _, tc := range cases {
		t.Run(tc.strategy, func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
			wf := e.Submit(manifest(gcWorkflow, "gc", tc.strategy, "1s"))
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
			}
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return len(e.podNames(ctx)) == len(tc.remaining), nil
			})
			if err != nil {
				t.Fatalf("pods left = %v, want %v", keys(e.podNames(t.Context())), tc.remaining)
			}
			for _, name := range tc.remaining {
				if _, ok := e.podNames(t.Context())[name]; !ok {
					t.Errorf("pod of %s was deleted, want it kept", name)
				}
			}
		})
	}
}

func TestADelayedPodGCDeletionSurvivesAControllerRestart(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(manifest(gcWorkflow, "gc", "OnWorkflowCompletion", "4s"))
	e.WaitCompleted(wf.Name)
	// The deletion time is recorded on the pods themselves...
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := e.podNames(ctx)
		for _, p := range pods {
			if p.Annotations[podgc.AnnotationDeleteAfter] == "" {
				return false, nil
			}
		}
		return len(pods) == 2, nil
	})
	if err != nil {
		var state []string
		for name, p := range e.podNames(t.Context()) {
			state = append(state, fmt.Sprintf("%s: delete-after %q, completed %q, finalizers %v", name, p.Annotations[podgc.AnnotationDeleteAfter], p.Labels[common.LabelKeyCompleted], p.Finalizers))
		}
		t.Fatalf("the delayed deletion was not recorded on the pods: %v", state)
	}
	// ...so a controller that restarts before they are due still deletes them.
	e.stopController()
	e.startController(envOptions{})
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(e.podNames(ctx)) == 0, nil
	})
	if err != nil {
		t.Fatalf("pods left after the restart: %v", keys(e.podNames(t.Context())))
	}
}

func keys(m map[string]corev1.Pod) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAWorkflowTemplatesPodGCCollectsThePodsOfTheWorkflowsThatReferenceIt: argo reads podGC from the spec
// a workflow runs, so `argo submit --from workflowtemplate/X` with podGC in X collects the pods by X's
// strategy (issue #46; wfguard failed such a workflow at start).
func TestAWorkflowTemplatesPodGCCollectsThePodsOfTheWorkflowsThatReferenceIt(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	e.createTemplate(manifest(gcWorkflow, "collecting", "OnPodSuccess", "1s"), false)
	wf := e.Submit(`
metadata: {name: gc-ref}
spec:
  workflowTemplateRef: {name: collecting}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := e.podNames(ctx)
		_, kept := pods["gc-ref[0].bad"]
		return len(pods) == 1 && kept, nil
	})
	if err != nil {
		t.Fatalf("pods left = %v, want only the failed step's (OnPodSuccess, from the template)", keys(e.podNames(t.Context())))
	}
}
