package compat

import (
	"testing"
	"time"
)

// subset is the part of argo's examples make test runs under both controllers: one per engine shape (a pod,
// steps, a DAG, loops, an exit handler over a failure, output parameters). make compat runs them all.
var subset = []string{"hello-world", "steps", "dag-diamond", "loops", "exit-handlers", "output-parameter"}

// TestASubsetOfArgosExamplesBehavesAsUnderStockArgo: each case ends the same under wfguard as under stock
// argo (phase, message class, node tree, outputs) and the pods both create differ only where
// ExplainedPodDifferences says why, and the status argo writes for its clients has the same shape.
func TestASubsetOfArgosExamplesBehavesAsUnderStockArgo(t *testing.T) {
	env := newDifferential(t)
	corpus, err := env.examples(t).Select(subset...)
	if err != nil {
		t.Fatal(err)
	}
	report := env.compare(t, corpus, 10*time.Minute)
	for _, v := range report.Verdicts {
		if !v.Same {
			t.Errorf("%s: a different outcome under wfguard: %v", v.Case, v.Diffs)
		}
		if len(v.PodDiffs) > 0 {
			t.Errorf("%s: %d unexplained pod differences, e.g. %s", v.Case, len(v.PodDiffs), v.PodDiffs[0])
		}
		if len(v.StatusDiffs) > 0 {
			t.Errorf("%s: argo get shows another status under wfguard: %v", v.Case, v.StatusDiffs)
		}
		if v.Argo.Phase == "" || len(v.Argo.Nodes) == 0 {
			t.Errorf("%s: stock argo did not run it (phase %q, %d nodes): the comparison would be empty", v.Case, v.Argo.Phase, len(v.Argo.Nodes))
		}
	}
}
