package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// ArgoClient runs argo's own client code (bin/argo-client: argo v3.7's workflow/util and typed clientset,
// built by make argo-tools) against namespace through kubeconfig, as argo's CLI, server and UI would, and
// returns what it printed.
func ArgoClient(t *testing.T, kubeconfig, namespace string, args ...string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "argo-client")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make argo-tools`", bin)
	}
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"--kubeconfig", kubeconfig, "-n", namespace}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("argo-client %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
