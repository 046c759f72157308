package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

const metricsAndBudget = `
metadata: {name: measured}
spec:
  entrypoint: main
  podDisruptionBudget: {minAvailable: 1}
  metrics:
    prometheus:
    - {name: ctrl_workflows, help: Workflows by status, labels: [{key: status, value: "{{workflow.status}}"}], counter: {value: "1"}}
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: ok}
      - {name: b, template: ok}
      - {name: c, template: ok, depends: "a && b"}
  - name: ok
    metrics:
      prometheus:
      - {name: ctrl_tasks, help: Tasks by status, labels: [{key: status, value: "{{status}}"}], counter: {value: "1"}}
    container: {image: alpine, command: ["true"]}
`

func TestEachCompletionIsCountedOnceAndTheBudgetLivesWhileTheWorkflowRuns(t *testing.T) {
	var h *env
	var mu sync.Mutex
	var edits int
	budgetSeen := false
	hooks := controller.Hooks{BeforePersist: func(key string) {
		name := strings.Split(key, "/")[1]
		kube := kubernetes.NewForConfigOrDie(cp.Config())
		if _, err := kube.PolicyV1().PodDisruptionBudgets(h.ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			mu.Lock()
			budgetSeen = true
			mu.Unlock()
		}
		// Another writer edits the workflow before each of our writes: each write conflicts and is re-applied,
		// and no completion may be counted twice for it.
		mu.Lock()
		edits++
		n := edits
		mu.Unlock()
		if n <= 20 {
			_, _ = h.argo.ArgoprojV1alpha1().Workflows(h.ns).Patch(context.Background(), name, types.MergePatchType,
				[]byte(fmt.Sprintf(`{"metadata":{"labels":{"edit":"%d"}}}`, n)), metav1.PatchOptions{})
		}
	}}
	h = start(t, 2, hooks, simnode.Script{})
	wf := h.submit(metricsAndBudget)
	done := h.waitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow %s %q, want Succeeded", done.Status.Phase, done.Status.Message)
	}
	reg := h.run.Controller.Registry()
	// The write is visible before the controller publishes it: wait for the completion's own count, which
	// afterPersist adds after the custom metrics.
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return counter(t, reg, "wfguard_workflows_completed_total") >= 1, nil
	})
	if err != nil {
		t.Fatalf("the completion was never published: %v", err)
	}
	if got := counter(t, reg, "argo_workflows_ctrl_tasks", "status", "Succeeded"); got != 3 {
		t.Errorf("argo_workflows_ctrl_tasks{status=Succeeded} = %v, want 3 (one per task)", got)
	}
	if got := counter(t, reg, "argo_workflows_ctrl_workflows", "status", "Succeeded"); got != 1 {
		t.Errorf("argo_workflows_ctrl_workflows{status=Succeeded} = %v, want 1", got)
	}
	if got := counter(t, reg, "wfguard_workflow_persist_total", "outcome", "conflict"); got < 1 {
		t.Errorf("persist conflicts = %v, want at least 1 (the test did not cause one)", got)
	}
	mu.Lock()
	seen := budgetSeen
	mu.Unlock()
	if !seen {
		t.Error("the PodDisruptionBudget was never there while the workflow ran")
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if _, err := kube.PolicyV1().PodDisruptionBudgets(h.ns).Get(t.Context(), wf.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the PodDisruptionBudget outlived its workflow: %v", err)
	}
}
