package controller_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

func TestAPanickedPassErrorsOnlyARunningWorkflowAndNeverRewritesAStoredOutcome(t *testing.T) {
	ns := harness.Namespace(t, cp.Config(), "guard")
	// The workers are held at their gate: no pass writes these workflows, so what the test sees is what
	// MarkError (a panicked pass's handling) wrote, or left alone.
	points := faultinject.NewPoints()
	points.Pause(faultinject.PointWorker)
	run := harness.StartController(t, cp.Config(), controller.Options{Namespace: ns, Logger: slog.New(slog.DiscardHandler), Points: points})
	c := run.Controller()
	completedErrors := func(t *testing.T) float64 {
		return counter(t, run.Registry(), "wfguard_workflows_completed_total", "phase", string(wfv1.WorkflowError))
	}
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
			before := completedErrors(t)
			marked, err := c.MarkError(t.Context(), ns+"/"+wf.Name, msg)
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
			counted := completedErrors(t) - before
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
		if marked, err := c.MarkError(t.Context(), ns+"/gone", msg); marked || err != nil {
			t.Errorf("markError = %v, %v; want false, nil", marked, err)
		}
	})
}

// A controller that may not update workflows cannot record a panic: the key is retried with per-key backoff
// (AddRateLimited), never in a hot loop, and the workflow is left as it was.
func TestAPanicThatCannotBeRecordedIsRetriedWithBackoff(t *testing.T) {
	ns := harness.Namespace(t, cp.Config(), "guard")
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	user := "wfguard-without-update-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	config := rest.CopyConfig(cp.Config())
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	if err := controlplanetest.WaitAuthorized(t.Context(), config,
		authorizationv1.ResourceAttributes{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		authorizationv1.ResourceAttributes{Verb: "list", Group: "argoproj.io", Resource: "workflows", Namespace: ns}); err != nil {
		t.Fatal(err)
	}

	run := harness.StartController(t, config, controller.Options{Namespace: ns, Workers: 2, Logger: slog.New(slog.DiscardHandler),
		Hooks: controller.Hooks{BeforePersist: func(string) { panic("injected") }}})

	argo := versioned.NewForConfigOrDie(cp.Config())
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "unrecordable", Namespace: ns},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Suspend: &wfv1.SuspendTemplate{}}}}}
	if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), wf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := ns + "/" + wf.Name
	// Three panics: the key came back after each failed Error write, through the rate limiter.
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return counter(t, run.Registry(), "wfguard_reconcile_total", "result", "panic") >= 3, nil
	}); err != nil {
		t.Fatalf("the panicking key was not retried: %v", err)
	}
	if n := run.Controller().Requeues(key); n < 2 {
		t.Errorf("requeues through the rate limiter = %d, want ≥ 2 (backoff, not an immediate Add)", n)
	}
	got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" || strings.Contains(got.Status.Message, "panicked") {
		t.Errorf("the workflow was written although the controller may not update it: %s %q", got.Status.Phase, got.Status.Message)
	}
}
