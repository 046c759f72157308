package passdemand

import (
	"testing"
	"time"
)

func TestAKeyRunsAPassOnlyForAChangeOrATimeItsLastPassAskedFor(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		do       string // changed, requested, begin, forget
		at       time.Time
		wantRun  bool
		wantWait time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a key never recorded runs, whatever brought it", []step{
			{do: "begin", at: at(0), wantRun: true}}},
		{"a change runs the next pass", []step{
			{do: "changed"}, {do: "begin", at: at(0), wantRun: true}}},
		{"a delayed entry for a change that a later pass already saw runs nothing", []step{
			{do: "changed"}, {do: "begin", at: at(0), wantRun: true},
			{do: "begin", at: at(time.Second), wantRun: false}}},
		{"a change seen during a pass runs the next one", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "changed"},
			{do: "begin", at: at(time.Second), wantRun: true}}},
		{"the time a pass asked for runs a pass when it comes", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "requested", at: at(time.Second)},
			{do: "begin", at: at(time.Second), wantRun: true}}},
		{"an entry before the asked time waits for the rest of it", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "requested", at: at(5 * time.Second)},
			{do: "begin", at: at(time.Second), wantRun: false, wantWait: 4 * time.Second},
			{do: "begin", at: at(5 * time.Second), wantRun: true}}},
		{"a pass consumes the time an earlier pass asked for", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "requested", at: at(5 * time.Second)},
			{do: "changed"}, {do: "begin", at: at(time.Second), wantRun: true},
			{do: "begin", at: at(5 * time.Second), wantRun: false}}},
		{"a retry asked for now runs at once", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "requested", at: at(0)},
			{do: "begin", at: at(0), wantRun: true}}},
		{"a forgotten key runs again, as one never recorded", []step{
			{do: "begin", at: at(0), wantRun: true}, {do: "forget"},
			{do: "begin", at: at(time.Second), wantRun: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			for i, s := range tc.steps {
				switch s.do {
				case "changed":
					l.Changed("ns/wf")
				case "requested":
					l.Requested("ns/wf", s.at)
				case "forget":
					l.Forget("ns/wf")
				case "begin":
					run, wait := l.Begin("ns/wf", s.at)
					if run != s.wantRun || wait != s.wantWait {
						t.Fatalf("step %d: Begin = (%v, %s), want (%v, %s)", i, run, wait, s.wantRun, s.wantWait)
					}
				}
			}
		})
	}
}

func TestKeysAreRecordedApart(t *testing.T) {
	var l Ledger
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	l.Begin("ns/a", now)
	l.Begin("ns/b", now)
	l.Changed("ns/a")
	if run, _ := l.Begin("ns/b", now); run {
		t.Error("a change of ns/a ran a pass of ns/b")
	}
	if run, _ := l.Begin("ns/a", now); !run {
		t.Error("the change of ns/a ran no pass")
	}
}
