package doctor

import (
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

func TestTheExitCodeCountsProblemsLeftAfterAppliedRepairs(t *testing.T) {
	problem := Finding{Object: "pod/x"}
	repairable := Finding{Object: "pod/y", Repair: &Repair{Kind: RepairReleaseFinalizer}}
	cases := []struct {
		name string
		r    Result
		want int
	}{
		{"nothing found is clean", Result{Report: Report{Checks: []CheckResult{{Name: "a"}}}}, ExitClean},
		{"a skipped check makes an incomplete audit", Result{Report: Report{Checks: []CheckResult{{Name: "a", Skipped: []string{"x"}}}}}, ExitIncomplete},
		{"a problem wins over a skipped check", Result{Report: Report{Checks: []CheckResult{{Name: "a", Findings: []Finding{problem}, Skipped: []string{"x"}}}}}, ExitProblems},
		{"a dry run repairs nothing", Result{Report: Report{Checks: []CheckResult{{Name: "a", Findings: []Finding{repairable}}}},
			DryRun: true, Fix: []Outcome{{Repair: *repairable.Repair}}}, ExitProblems},
		{"an applied repair removes its problem", Result{Report: Report{Checks: []CheckResult{{Name: "a", Findings: []Finding{repairable}}}},
			Fix: []Outcome{{Repair: *repairable.Repair, Applied: true}}}, ExitClean},
		{"a repair not needed leaves the problem counted", Result{Report: Report{Checks: []CheckResult{{Name: "a", Findings: []Finding{repairable}}}},
			Fix: []Outcome{{Repair: *repairable.Repair, Note: "the pod is gone"}}}, ExitProblems},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.r); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTheExecutorAccountIsTheExecutorsElseThePods(t *testing.T) {
	run := func(name string) wfv1.Template {
		return wfv1.Template{Name: name, Container: &corev1.Container{Image: "alpine"}}
	}
	cases := []struct {
		name string
		wf   wfv1.WorkflowSpec
		want []string
	}{
		{"no account anywhere is default", wfv1.WorkflowSpec{Templates: []wfv1.Template{run("a"), {Name: "s", Suspend: &wfv1.SuspendTemplate{}}}}, []string{"default"}},
		{"the workflow's account", wfv1.WorkflowSpec{ServiceAccountName: "wf-sa", Templates: []wfv1.Template{run("a")}}, []string{"wf-sa"}},
		{"a template's account wins for it", wfv1.WorkflowSpec{ServiceAccountName: "wf-sa", Templates: []wfv1.Template{run("a"), func() wfv1.Template {
			t := run("b")
			t.ServiceAccountName = "b-sa"
			return t
		}()}}, []string{"wf-sa", "b-sa"}},
		{"the executor's account wins over the pod's", wfv1.WorkflowSpec{ServiceAccountName: "wf-sa", Executor: &wfv1.ExecutorConfig{ServiceAccountName: "exec"},
			Templates: []wfv1.Template{run("a")}}, []string{"exec"}},
	}
	for _, tc := range cases {
		if got := executorAccounts(&wfv1.Workflow{Spec: tc.wf}); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
