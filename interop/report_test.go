package interop

import (
	"strings"
	"testing"
)

func TestCompareNamesTheFirstDifferenceOfEachStep(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		argo     Result
		wfguard  Result
		want     string
	}{
		{"the same exit and lines are the same", Result{Lines: []string{"a"}}, Result{Lines: []string{"a"}}, ""},
		{"a different exit code is named", Result{Exit: 0}, Result{Exit: 1}, "exit code: argo 0, wfguard 1"},
		{"a wait that timed out on one side is named", Result{}, Result{Note: "waited"}, "argo: ok; wfguard: waited"},
		{"a line only argo printed is named", Result{Lines: []string{"a", "b"}}, Result{Lines: []string{"a"}}, "only argo: b (+0 more)"},
		{"a line only wfguard printed is named", Result{Lines: []string{"a"}}, Result{Lines: []string{"a", "c"}}, "only wfguard: c (+0 more)"},
		{"changed lines name both", Result{Lines: []string{"x = 1"}}, Result{Lines: []string{"x = 2"}}, "argo: x = 1; wfguard: x = 2 (1 and 1 lines differ)"},
		{"the same lines in another order differ", Result{Lines: []string{"a", "b"}}, Result{Lines: []string{"b", "a"}}, "the same lines in another order"},
	} {
		rows := Compare("s", Kube, []Result{tc.argo}, []Result{tc.wfguard})
		if len(rows) != 1 || rows[0].Diff != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sentence, rows[0].Diff, tc.want)
		}
	}
}

func TestDeliberateReadsOnlyItsOwnSection(t *testing.T) {
	doc := strings.Join([]string{
		"## Other", "- `not/this/one`: elsewhere",
		"### Deliberate interop differences", "Some prose.", "- `retry/kube/retry {wf}`: why", "- `stop/server/get {wf}`: why",
		"## Next", "- `nor/this/one`: after",
	}, "\n")
	got := Deliberate(doc)
	if len(got) != 2 || !got["retry/kube/retry {wf}"] || !got["stop/server/get {wf}"] {
		t.Errorf("got %v, want the two entries of the section", got)
	}
}
