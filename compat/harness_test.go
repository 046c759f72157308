package compat

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wfguard/wfguard/test/harness"
)

// differential is what both the subset in make test and make compat need: the module root, argo's examples
// and a wfguard binary built from this tree.
type differential struct {
	root    string
	version string
	wfguard string
}

func newDifferential(t *testing.T) *differential {
	t.Helper()
	root := harness.ModuleRoot(t)
	version, err := ArgoVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := BuildWFGuard(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &differential{root: root, version: version, wfguard: bin}
}

func (d *differential) examples(t *testing.T) *Corpus {
	t.Helper()
	dir, err := ArgoModuleDir(d.root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadCorpus(filepath.Join(dir, "examples"), OriginArgoExamples)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// own is compat/corpus: our workflows per feature.
func (d *differential) own(t *testing.T) *Corpus {
	t.Helper()
	c, err := LoadCorpus(filepath.Join(d.root, "compat", "corpus"), OriginOwn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// compare runs corpus under stock argo, then under wfguard (one after the other: two controllers and two
// control planes at once would measure the machine, not the controllers), and prints the table.
func (d *differential) compare(t *testing.T, corpus *Corpus, timeout time.Duration) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var runs [2][]Observation
	for i, c := range []Controller{Argo, WFGuard} {
		start := time.Now()
		obs, err := Run(ctx, RunOptions{Root: d.root, Controller: c, WFGuardBinary: d.wfguard, Corpus: corpus, Logf: t.Logf})
		if err != nil {
			t.Fatalf("running the corpus under %s: %v", c, err)
		}
		t.Logf("%d cases under %s in %s", len(obs), c, time.Since(start).Round(time.Second))
		runs[i] = obs
	}
	report, err := NewReport(d.version, corpus, runs[0], runs[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
	return report
}
