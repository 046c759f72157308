package interop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wfguard/wfguard/compat"
	"github.com/wfguard/wfguard/test/harness"
)

// startEnv builds wfguard from this tree and starts an Env, stopped at the end of the test; the logs of
// the controllers and servers stay in $TMPDIR/wfguard-interop.
func startEnv(t *testing.T) (*Env, string) {
	t.Helper()
	root := harness.ModuleRoot(t)
	bin, err := compat.BuildWFGuard(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(os.TempDir(), "wfguard-interop")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	// The node and the controllers live as long as the context Start is given: the test's.
	env, err := Start(t.Context(), Options{Root: root, WFGuardBinary: bin, LogDir: logs, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("logs of the controllers and argo servers: %s", logs)
	return env, root
}

// runSuite runs scenarios in both modes, marks the deliberate differences docs/compatibility.md lists
// and prints the table.
func runSuite(t *testing.T, env *Env, root string, scenarios []Scenario, timeout time.Duration) []Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rows, err := Suite{Env: env, Scenarios: scenarios, Modes: []Mode{Kube, Server}, Logf: t.Logf}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	deliberate := Deliberate(string(doc))
	for i := range rows {
		rows[i].Deliberate = !rows[i].Same() && deliberate[rows[i].ID()]
	}
	if err := WriteTable(os.Stdout, rows); err != nil {
		t.Fatal(err)
	}
	var diffs strings.Builder
	_ = WriteDifferences(&diffs, rows)
	path := filepath.Join(os.TempDir(), "wfguard-interop", "differences.txt")
	if err := os.WriteFile(path, []byte(diffs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("every differing line: %s", path)
	return rows
}
