package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestDependsExpressionsEvaluateLikeArgo(t *testing.T) {
	phases := map[string]wfv1.NodePhase{"A": wfv1.NodeSucceeded, "B": wfv1.NodeFailed, "C": wfv1.NodeError,
		"D": wfv1.NodeSkipped, "E": wfv1.NodeOmitted}
	phase := func(task string) (wfv1.NodePhase, *wfv1.ContinueOn) {
		if task == "F" {
			return wfv1.NodeFailed, &wfv1.ContinueOn{Failed: true}
		}
		return phases[task], nil
	}
	cases := []struct {
		expr string
		want bool
	}{
		{"A", true},
		{"B", false},
		{"D", true},
		{"A.Succeeded", true},
		{"B.Failed", true},
		{"C.Errored", true},
		{"D.Skipped", true},
		{"E.Omitted", true},
		{"B.Completed", true},
		{"A && B", false},
		{"A && B.Failed", true},
		{"B || A", true},
		{"!B.Succeeded", true},
		{"(A || B) && !(C.Errored && D.Skipped)", false},
		{"A&&(B.Failed||C)", true},
		{"F", true},
		{"F.Succeeded", false},
	}
	for _, tc := range cases {
		e, err := parseDepends(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if got := e.eval(phase); got != tc.want {
			t.Errorf("%q = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestMalformedDependsIsAnErrorNamingTheProblem(t *testing.T) {
	cases := map[string]string{
		"A &&":     "unexpected end",
		"(A || B":  "missing )",
		"A.Sucess": `"A.Sucess" is not a task or task result`,
		"&& A":     `unexpected "&&"`,
		"A B":      `unexpected "B"`,
		"A & B":    `unexpected "&"`,
	}
	for expr, want := range cases {
		if _, err := parseDepends(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", expr, err, want)
		}
	}
}
