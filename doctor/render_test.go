package doctor

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// Pins WriteHuman's output byte for byte: every check status, a finding with and without namespace,
// workflow and age, repairs, each kind of repair outcome, and each summary.
func TestTheHumanReportReadsExactlyAsBefore(t *testing.T) {
	now := t0.Add(time.Hour)
	release := &Repair{Kind: RepairReleaseFinalizer, Namespace: "ns", Name: "p1", Workflow: "gone", WorkflowUID: "u-gone"}
	finalize := &Repair{Kind: RepairFinalizeResult, Namespace: "ns", Name: "r1", Workflow: "wf"}
	checks := []CheckResult{
		{Name: "clean"},
		{Name: "one", Findings: []Finding{{Namespace: "ns", Workflow: "gone", Object: "pod/p1", Message: "holds it", Since: t0, Repair: release}}},
		{Name: "two", Findings: []Finding{
			{Object: "workflowaction/a", Message: "no outcome"},
			{Namespace: "ns", Workflow: "wf", Object: "workflow/wf", Message: "no reaction", Since: now.Add(-90 * time.Second)},
		}, Skipped: []string{"pods: forbidden"}},
		{Name: "unread", Skipped: []string{"workflows: forbidden", "actions: forbidden"}},
		{Name: "result", Findings: []Finding{{Namespace: "ns", Workflow: "wf", Object: "node wf.a (wf-1)", Message: "its pod is gone", Repair: finalize}}},
	}
	outcomes := []Outcome{
		{Repair: *release, Applied: true},
		{Repair: *finalize, Applied: true, Error: "the Event was refused"},
		{Repair: *release, Error: "forbidden"},
		{Repair: *finalize, Note: "the result is complete already"},
	}
	for _, tc := range []struct {
		sentence string
		r        Result
		want     string
	}{
		{"a clean audit of all namespaces", Result{Report: Report{Now: now, Checks: []CheckResult{{Name: "clean"}}}}, `wfguard doctor: all namespaces at 2030-01-01T11:00:00Z

clean: ok

no problems found
`},
		{"problems without --fix", Result{Report: Report{Namespace: "ns", Now: now, Checks: checks}}, `wfguard doctor: namespace ns at 2030-01-01T11:00:00Z

clean: ok

one: 1 problem
  ns pod/p1 of workflow gone: holds it (since 2030-01-01T10:00:00Z, 1h0m0s ago)
    repair: release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone)

two: 2 problems
  workflowaction/a: no outcome
  ns workflow/wf: no reaction (since 2030-01-01T10:58:30Z, 1m30s ago)
  skipped: pods: forbidden

unread: not checked
  skipped: workflows: forbidden
  skipped: actions: forbidden

result: 1 problem
  ns node wf.a (wf-1) of workflow wf: its pod is gone
    repair: finalize task result ns/r1 (label workflows.argoproj.io/report-outputs-completed=true) of workflow wf: its pod is gone

4 problems found (2 with a safe repair: doctor --fix); 2 of 5 checks incomplete (see skipped)
`},
		{"--fix with nothing to repair", Result{Report: Report{Now: now, Checks: checks[3:4]}, Fix: []Outcome{}}, `wfguard doctor: all namespaces at 2030-01-01T11:00:00Z

unread: not checked
  skipped: workflows: forbidden
  skipped: actions: forbidden

Repairs:
  none: no problem has a safe automatic repair

no problems found; 1 of 1 checks incomplete (see skipped)
`},
		{"a dry run", Result{Report: Report{Now: now, Checks: checks[1:2]}, Fix: outcomes[:2], DryRun: true}, `wfguard doctor: all namespaces at 2030-01-01T11:00:00Z

one: 1 problem
  ns pod/p1 of workflow gone: holds it (since 2030-01-01T10:00:00Z, 1h0m0s ago)
    repair: release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone)

Repairs (dry run: nothing changed; add --yes to apply):
  would release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone)
  would finalize task result ns/r1 (label workflows.argoproj.io/report-outputs-completed=true) of workflow wf: its pod is gone

1 problem found (1 with a safe repair: doctor --fix)
`},
		{"--fix --yes", Result{Report: Report{Now: now, Checks: checks}, Fix: outcomes}, `wfguard doctor: all namespaces at 2030-01-01T11:00:00Z

clean: ok

one: 1 problem
  ns pod/p1 of workflow gone: holds it (since 2030-01-01T10:00:00Z, 1h0m0s ago)
    repair: release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone)

two: 2 problems
  workflowaction/a: no outcome
  ns workflow/wf: no reaction (since 2030-01-01T10:58:30Z, 1m30s ago)
  skipped: pods: forbidden

unread: not checked
  skipped: workflows: forbidden
  skipped: actions: forbidden

result: 1 problem
  ns node wf.a (wf-1) of workflow wf: its pod is gone
    repair: finalize task result ns/r1 (label workflows.argoproj.io/report-outputs-completed=true) of workflow wf: its pod is gone

Repairs:
  done: release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone)
  done: finalize task result ns/r1 (label workflows.argoproj.io/report-outputs-completed=true) of workflow wf: its pod is gone; but the Event was refused
  failed: release workflows.argoproj.io/status from pod ns/p1 (its workflow gone, uid u-gone, is gone): forbidden
  not needed: finalize task result ns/r1 (label workflows.argoproj.io/report-outputs-completed=true) of workflow wf: its pod is gone: the result is complete already

4 problems found (2 with a safe repair: doctor --fix); 2 of 5 checks incomplete (see skipped)
`},
	} {
		var b strings.Builder
		if err := WriteHuman(&b, tc.r); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.sentence, got, tc.want)
		}
	}
}
