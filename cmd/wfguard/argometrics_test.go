package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/argometrics"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func TestTheBinaryServesArgosMetricNamesAfterAWorkflowRan(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "argomet")
	if err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	proc := startController(t, "argo-metrics", ns)
	argo := versioned.NewForConfigOrDie(cp.Config())
	wf, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "scraped"},
		Spec:       wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: containerSpec()}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the workflow succeeded", 60*time.Second, func() bool {
		got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == wfv1.WorkflowSucceeded
	})
	// The phase gauge reads the controller's cache, which hears the final write a moment after the API does,
	// and the counters move on their own paths: wait until /metrics shows all of it, then report what is missing.
	var metrics string
	missing := func() []string {
		var out []string
		if !strings.Contains(metrics, `argo_workflows_gauge{status="Succeeded"} 1`) {
			out = append(out, `the phase gauge counting the succeeded workflow`)
		}
		for _, e := range argometrics.Catalog {
			typeLine := "# TYPE " + e.Name + " " + string(e.Type)
			switch {
			case !e.Served && strings.Contains(metrics, "# TYPE "+e.Name+" "):
				out = append(out, e.Name+" is documented as not served but /metrics has it")
			case e.Served && e.Presence != argometrics.OnEvent && !strings.Contains(metrics, typeLine):
				out = append(out, fmt.Sprintf("/metrics lacks %q", typeLine))
			}
		}
		for _, want := range []string{
			"argo_workflows_is_leader 1",
			`argo_workflows_total_count{namespace="` + ns + `",phase="Succeeded"} 1`,
			`argo_workflows_queue_adds_count{queue_name="workflow_queue"}`,
			`argo_workflows_k8s_request_total{kind="pods",status_code="201",verb="Create"} 1`,
			`argo_workflows_error_count{cause="OperationPanic"} 0`,
			`wfguard_reconcile_total{result="success"}`,
		} {
			if !strings.Contains(metrics, want) {
				out = append(out, "/metrics lacks "+want)
			}
		}
		return out
	}
	// A timeout is not an error of its own: what is still missing is reported below.
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		metrics = proc.metrics(t)
		return len(missing()) == 0, nil
	})
	for _, m := range missing() {
		t.Error(m)
	}
}
