//go:build compat

package compat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// TestHelloWorldSucceedsUnderStockArgo runs argo's own examples/hello-world.yaml under stock argo's
// workflow-controller, out of process, on an embedded control plane with the simulated node: the smallest
// proof that the oracle of issue #16 runs.
func TestHelloWorldSucceedsUnderStockArgo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Root: root, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	config := cp.Config()
	if err := controlplane.InstallCRDs(ctx, config, filepath.Join(root, "config", "crd", "argo"), time.Minute); err != nil {
		t.Fatal(err)
	}
	ns, err := controlplane.CreateNamespace(ctx, config, "compat")
	if err != nil {
		t.Fatal(err)
	}
	node, err := simnode.Start(ctx, simnode.Options{Config: config, Namespace: ns, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	oracle, err := StartOracle(ctx, config, OracleOptions{Root: root, Kubeconfig: cp.Kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("argo's workflow-controller log (last 60 lines):\n%s", oracle.LogTail(60))
		}
		if err := oracle.Stop(); err != nil {
			t.Error(err)
		}
	})

	argoDir, err := ArgoModuleDir(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(argoDir, "examples", "hello-world.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf wfv1.Workflow
	if err := yaml.UnmarshalStrict(data, &wf); err != nil {
		t.Fatal(err)
	}
	client := versioned.NewForConfigOrDie(config)
	created, err := client.ArgoprojV1alpha1().Workflows(ns).Create(ctx, &wf, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("submitted %s/%s", ns, created.Name)
	submitted := time.Now()

	var got *wfv1.Workflow
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := oracle.Exited(); exited {
			t.Fatalf("argo's workflow-controller exited (%v); log:\n%s", err, oracle.LogTail(40))
		}
		got, err = client.ArgoprojV1alpha1().Workflows(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase.Completed(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to complete under stock argo (phase %q): %v", created.Name, got.Status.Phase, err)
	}
	var nodes []string
	for _, n := range got.Status.Nodes {
		nodes = append(nodes, n.DisplayName+" "+string(n.Type)+" "+string(n.Phase))
	}
	t.Logf("%s: %s %q after %s; nodes: %s", created.Name, got.Status.Phase, got.Status.Message,
		time.Since(submitted).Round(time.Millisecond), strings.Join(nodes, ", "))
	if got.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("%s under stock argo: phase %s (%q), want Succeeded", created.Name, got.Status.Phase, got.Status.Message)
	}
	if len(got.Status.Nodes) != 1 {
		t.Errorf("%s under stock argo: %d nodes, want 1 (the pod)", created.Name, len(got.Status.Nodes))
	}
}
