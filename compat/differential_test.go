//go:build compat

package compat

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	casesFlag   = flag.String("compat.cases", "", "comma-separated case names to run (default: every example)")
	outFlag     = flag.String("compat.out", "", "write the JSON report here (default: compat/results/latest.json)")
	minSameFlag = flag.Float64("compat.min-same", 0, "fail when fewer than this percentage of argo's examples have the same outcome")
	corpusFlag  = flag.String("compat.corpus", "all", "which corpus to run: examples (argo's), own (compat/corpus) or all")
)

// TestArgosExamplesUnderWFGuardAndStockArgo runs argo's v3.7.9 examples under both controllers and writes
// the comparison (table on stdout, JSON in compat/results). It fails when a controller cannot run the
// corpus at all or the share of same outcomes is below -compat.min-same.
func TestArgosExamplesUnderWFGuardAndStockArgo(t *testing.T) {
	env := newDifferential(t)
	corpus := env.corpus(t, *corpusFlag)
	if *casesFlag != "" {
		var err error
		if corpus, err = corpus.Select(strings.Split(*casesFlag, ",")...); err != nil {
			t.Fatal(err)
		}
	}
	report := env.compare(t, corpus, 45*time.Minute)
	out := *outFlag
	if out == "" {
		out = filepath.Join(env.root, "compat", "results", "latest.json")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := report.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	t.Logf("JSON report: %s", out)
	if report.Percent() < *minSameFlag {
		t.Errorf("same outcome on %.1f%% of the cases, want at least %.1f%%", report.Percent(), *minSameFlag)
	}
}

func (d *differential) corpus(t *testing.T, which string) *Corpus {
	t.Helper()
	switch which {
	case "examples":
		return d.examples(t)
	case "own":
		return d.own(t)
	case "all":
		c, err := d.examples(t).Merge(d.own(t))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatalf("-compat.corpus=%q: want examples, own or all", which)
	return nil
}
