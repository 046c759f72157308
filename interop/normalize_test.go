package interop

import (
	"slices"
	"testing"
)

func TestNormalizerRewritesWhatDiffersBetweenRunsAndKeepsWhatMeansSomething(t *testing.T) {
	n := NewNormalizer()
	n.Learn("hello-k-x7z2q", "hello-k-ab9cd")
	n.LearnAs("hello-k-x7z2q-1234567890", "node(W1[0].a)")
	for _, tc := range []struct{ sentence, in, want string }{
		{"workflow names become placeholders in creation order", "hello-k-ab9cd resubmitted from hello-k-x7z2q", "W2 resubmitted from W1"},
		{"a learned node ID becomes its node's name", "boundary hello-k-x7z2q-1234567890", "boundary node(W1[0].a)"},
		{"an unlearned name-derived hash is masked", "pod hello-k-x7z2q-say-987654321", "pod W1-say-HASH"},
		{"UIDs are masked", "uid 0b7c1c1e-58a6-4b56-9f64-2a1b3c4d5e6f", "uid UID"},
		{"RFC 3339 times are masked", "at 2026-12-07T20:54:18Z", "at TIME"},
		{"argo's humanized times are masked", "Created: Mon Dec 07 20:54:18 +0000 (10 seconds ago)", "Created: TIME"},
		{"Go's time format is masked", "Succeeded at 2026-12-07 20:54:18 +0000 UTC", "Succeeded at TIME"},
		{"durations are masked", "Duration: 1m 5s, took 10s", "Duration: DURATION, took DURATION"},
		{"exit codes and progress stay", "exit code 1, 1/2", "exit code 1, 1/2"},
	} {
		if got := n.String(tc.in); got != tc.want {
			t.Errorf("%s: %q became %q, want %q", tc.sentence, tc.in, got, tc.want)
		}
	}
}

func TestTextKeepsOnlyTheLastScreenOfAWatch(t *testing.T) {
	n := NewNormalizer()
	out := "Name:   w\nStatus:   Running\n\x1b[H\x1b[2JName:   w\nStatus:   Succeeded\n"
	if got, want := n.Text(out), []string{"Name: w", "Status: Succeeded"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTextSortsTheResourcesDurationArgoPrintsFromAMap(t *testing.T) {
	n := NewNormalizer()
	a := n.Text("ResourcesDuration:   3s*(100Mi memory),1s*(1 cpu)\n")
	b := n.Text("ResourcesDuration:   1s*(1 cpu),3s*(100Mi memory)\n")
	if !slices.Equal(a, b) || !slices.Equal(a, []string{"ResourcesDuration: DURATION*(1 cpu),DURATION*(100Mi memory)"}) {
		t.Errorf("the two orders normalize to %q and %q, want one sorted line", a, b)
	}
}

func TestJSONBecomesSortedPathsWithVolatileFieldsMarkedSet(t *testing.T) {
	n := NewNormalizer()
	n.Learn("wf-abcde")
	got, err := n.JSON(`{"metadata":{"name":"wf-abcde","uid":"x"},"status":{"resourcesDuration":{"cpu":3},"progress":"1/1","nodes":{"wf-abcde":{"phase":"Succeeded"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`.metadata.name = "W1"`, `.metadata.uid = SET`, `.status.nodes.W1.phase = "Succeeded"`,
		`.status.progress = "1/1"`, `.status.resourcesDuration = SET`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAListingsRowsCompareAsASetBelowItsHeader(t *testing.T) {
	r := &scenarioRun{norm: NewNormalizer()}
	for _, tc := range []struct {
		sentence string
		args     []string
		want     []string
	}{
		{"argo list's rows are sorted", []string{"list", "--prefix", "p"}, []string{"NAME STATUS", "a Running", "b Succeeded"}},
		{"cron list's rows are sorted", []string{"cron", "list"}, []string{"NAME STATUS", "a Running", "b Succeeded"}},
		{"any other output keeps its order", []string{"get", "w"}, []string{"NAME STATUS", "b Succeeded", "a Running"}},
	} {
		var res Result
		r.normalize(&res, Step{Args: tc.args}, Output{Stdout: "NAME STATUS\nb Succeeded\na Running\n"})
		if !slices.Equal(res.Lines, tc.want) {
			t.Errorf("%s: %q, want %q", tc.sentence, res.Lines, tc.want)
		}
	}
}
