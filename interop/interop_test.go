//go:build interop

package interop

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	scenariosFlag = flag.String("interop.scenarios", "", "comma-separated scenarios to run (default: all)")
	outFlag       = flag.String("interop.out", "", "write the table here (default: interop/results/latest.txt)")
)

// TestArgosCLIAndServerDriveWFGuardAsTheyDriveStockArgo runs every scenario with argo's CLI in kubernetes
// mode and through argo-server under both controllers, writes the table, and fails on each step that
// differs unless docs/compatibility.md lists it as a deliberate difference.
func TestArgosCLIAndServerDriveWFGuardAsTheyDriveStockArgo(t *testing.T) {
	scenarios := Scenarios
	if *scenariosFlag != "" {
		want := strings.Split(*scenariosFlag, ",")
		scenarios = slices.DeleteFunc(slices.Clone(Scenarios), func(s Scenario) bool { return !slices.Contains(want, s.Name) })
		if len(scenarios) != len(want) {
			t.Fatalf("-interop.scenarios=%s: %d of them exist", *scenariosFlag, len(scenarios))
		}
	}
	env, root := startEnv(t)
	rows := runSuite(t, env, root, scenarios, 30*time.Minute)
	out := *outFlag
	if out == "" {
		out = filepath.Join(root, "interop", "results", "latest.txt")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteTable(f, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("table: %s", out)
	for _, r := range rows {
		if !r.Same() && !r.Deliberate {
			t.Errorf("%s: %s", r.ID(), r.Diff)
		}
	}
}
