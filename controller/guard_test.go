package controller

import (
	"log/slog"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/test/controlplane"
)

func TestAPanickedPassErrorsOnlyARunningWorkflowAndNeverRewritesAStoredOutcome(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "guard")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cp.Config(), Options{Namespace: ns, Registry: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.events.Shutdown()
	defer c.queue.ShutDown() // New starts the delaying queue; Run is what would end it
	argo := versioned.NewForConfigOrDie(cp.Config())
	const msg = "the controller panicked reconciling this workflow: boom"
	cases := []struct {
		sentence   string
		phase      wfv1.WorkflowPhase // "" creates no workflow
		wantMarked bool
		wantPhase  wfv1.WorkflowPhase
	}{
		{"a running workflow is marked Error with the panic message", wfv1.WorkflowRunning, true, wfv1.WorkflowError},
		{"a new workflow (no phase yet) is marked Error", "", true, wfv1.WorkflowError},
		{"a succeeded workflow keeps its outcome", wfv1.WorkflowSucceeded, false, wfv1.WorkflowSucceeded},
		{"a failed workflow keeps its outcome", wfv1.WorkflowFailed, false, wfv1.WorkflowFailed},
	}
	for i, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf-" + string(rune('a'+i)), Namespace: ns},
				Spec:   wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Suspend: &wfv1.SuspendTemplate{}}}},
				Status: wfv1.WorkflowStatus{Phase: tc.phase, Message: "stored message"}}
			if tc.phase.Completed() {
				wf.Labels = map[string]string{common.LabelKeyCompleted: "true"}
			}
			created, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), wf, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			before := testutil.ToFloat64(c.metrics.completed.WithLabelValues(string(wfv1.WorkflowError)))
			marked, err := c.markError(t.Context(), ns+"/"+wf.Name, msg)
			if err != nil || marked != tc.wantMarked {
				t.Fatalf("markError = %v, %v; want %v, nil", marked, err, tc.wantMarked)
			}
			got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", got.Status.Phase, tc.wantPhase)
			}
			counted := testutil.ToFloat64(c.metrics.completed.WithLabelValues(string(wfv1.WorkflowError))) - before
			if tc.wantMarked {
				if got.Status.Message != msg || got.Labels[common.LabelKeyCompleted] != "true" || got.Labels[common.LabelKeyPhase] != "Error" || got.Status.FinishedAt.IsZero() {
					t.Errorf("marked workflow: message %q, labels %v, finishedAt %v", got.Status.Message, got.Labels, got.Status.FinishedAt)
				}
				if counted != 1 {
					t.Errorf("wfguard_workflows_completed_total{phase=Error} delta = %v, want 1", counted)
				}
				return
			}
			if got.ResourceVersion != created.ResourceVersion || got.Status.Message != "stored message" || counted != 0 {
				t.Errorf("a completed workflow was rewritten: rv %s→%s, message %q, counted %v", created.ResourceVersion, got.ResourceVersion, got.Status.Message, counted)
			}
		})
	}
	t.Run("a deleted workflow is not marked and not an error", func(t *testing.T) {
		if marked, err := c.markError(t.Context(), ns+"/gone", msg); marked || err != nil {
			t.Errorf("markError = %v, %v; want false, nil", marked, err)
		}
	})
}
