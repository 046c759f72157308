package compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareCountsAnOutcomeAsSameOnlyWhenPhaseMessageClassTreeAndOutputsAgree(t *testing.T) {
	base := func() Observation {
		return Observation{Case: "c", Phase: "Failed", Message: "child 'c-1' failed",
			Nodes:   map[string]string{"c": "c Steps Failed", "c[0].a": "a Pod Failed"},
			NodeIDs: map[string]string{"c": "c", "c[0].a": "c-1234"},
			Outputs: map[string]map[string]string{"c[0].a": {"exitCode": "1"}},
			Pods:    map[string]map[string]string{"c[0].a": {"containers.main.image": "busybox", "finalizers": "", "spec.activeDeadlineSeconds": "19"}},
			Status: map[string]string{"progress": "0/1", "progress of c[0].a": "0/1", "resourcesDuration": "cpu,memory",
				"conditions": "Completed=True PodRunning=False", "estimatedDuration": "false"}}
	}
	for _, tc := range []struct {
		sentence     string
		change       func(w *Observation)
		wantSame     bool
		wantRejected bool
		wantDiff     string // substring of a diff ("" = none)
		wantPodDiff  string
		wantStatus   string // substring of a status diff ("" = none)
	}{
		{"identical observations are the same", func(*Observation) {}, true, false, "", "", ""},
		{"a differently worded message of the same class is the same", func(w *Observation) { w.Message = "child c-1 failed" }, true, false, "", "", ""},
		{"a different phase differs", func(w *Observation) { w.Phase = "Succeeded" }, false, false, "phase: argo Failed, wfguard Succeeded", "", ""},
		{"a message of another class differs", func(w *Observation) { w.Message = "invalid spec" }, false, false, "message:", "", ""},
		{"a missing node differs", func(w *Observation) { delete(w.Nodes, "c[0].a") }, false, false, `node: c[0].a: argo "a Pod Failed", wfguard none`, "", ""},
		{"a node of another ID differs, since pod names and argo's CLI derive from it",
			func(w *Observation) { w.NodeIDs["c[0].a"] = "c-9999" }, false, false, `node ID of c[0].a: argo "c-1234", wfguard "c-9999"`, "", ""},
		{"a different output differs", func(w *Observation) { w.Outputs["c[0].a"]["exitCode"] = "0" }, false, false, "outputs of c[0].a: exitCode", "", ""},
		{"an unsupported feature is a rejection", func(w *Observation) { w.Message = "not supported by wfguard yet: memoize" }, false, true, "message:", "", ""},
		{"a pod field that differs is an unexplained pod difference, not an outcome difference",
			func(w *Observation) { w.Pods["c[0].a"]["containers.main.image"] = "alpine" }, true, false, "", "containers.main.image", ""},
		{"a deadline one second apart is the clock, not a difference",
			func(w *Observation) { w.Pods["c[0].a"]["spec.activeDeadlineSeconds"] = "20" }, true, false, "", "", ""},
		{"a deadline two seconds apart is a difference",
			func(w *Observation) { w.Pods["c[0].a"]["spec.activeDeadlineSeconds"] = "21" }, true, false, "", "spec.activeDeadlineSeconds", ""},
		{"an explained pod field is not an unexplained difference",
			func(w *Observation) { w.Pods["c[0].a"]["finalizers"] = "workflows.argoproj.io/status" }, true, false, "", "", ""},
		{"a different final progress is a client status difference, not an outcome difference",
			func(w *Observation) { w.Status["progress"] = "1/1" }, true, false, "", "", `status: progress: argo "0/1", wfguard "1/1"`},
		{"a resource measured on one side only is a client status difference",
			func(w *Observation) { w.Status["resourcesDuration"] = "cpu" }, true, false, "", "", "status: resourcesDuration"},
		{"a missing condition is a client status difference",
			func(w *Observation) { w.Status["conditions"] = "Completed=True" }, true, false, "", "", "status: conditions"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a, w := base(), base()
			tc.change(&w)
			v := Compare(a, w)
			if v.Same != tc.wantSame || v.Rejected != tc.wantRejected {
				t.Fatalf("same=%v rejected=%v, want %v %v (diffs %v)", v.Same, v.Rejected, tc.wantSame, tc.wantRejected, v.Diffs)
			}
			if got := strings.Join(v.Diffs, "\n"); (tc.wantDiff == "") != (got == "") || !strings.Contains(got, tc.wantDiff) {
				t.Fatalf("diffs %q, want one containing %q", got, tc.wantDiff)
			}
			if got := strings.Join(v.PodDiffs, "\n"); (tc.wantPodDiff == "") != (got == "") || !strings.Contains(got, tc.wantPodDiff) {
				t.Fatalf("pod diffs %q, want one containing %q", got, tc.wantPodDiff)
			}
			if got := strings.Join(v.StatusDiffs, "\n"); (tc.wantStatus == "") != (got == "") || !strings.Contains(got, tc.wantStatus) {
				t.Fatalf("status diffs %q, want one containing %q", got, tc.wantStatus)
			}
		})
	}
}

func TestLoadCorpusNamesEveryWorkflowAndKeepsWhatTheyNeed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  generateName: hello-\nspec:\n  entrypoint: a\n  templates:\n  - name: a\n    container:\n      image: busybox\n")
	write("sub/two.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: WorkflowTemplate\nmetadata:\n  name: t\nspec: {}\n---\n"+
		"apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: one\nspec:\n  entrypoint: a\n---\n"+
		"apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: two\nspec:\n  entrypoint: a\n")
	write("cron.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nmetadata:\n  name: c\n")
	write("bad.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: bad\nspec:\n  entrypoint: 3\n  nosuchfield: x\n")
	c, err := LoadCorpus(dir, OriginArgoExamples)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cs := range c.Cases {
		names = append(names, cs.Name+"="+cs.Workflow.Name)
		if cs.Origin != OriginArgoExamples {
			t.Errorf("case %s has origin %q, want the one it was loaded with", cs.Name, cs.Origin)
		}
	}
	if got, want := strings.Join(names, " "), "hello=hello sub-two=sub-two sub-two#2=sub-two-2"; got != want {
		t.Errorf("cases %q, want %q", got, want)
	}
	if len(c.Objects) != 1 || c.Objects[0].GetKind() != "WorkflowTemplate" {
		t.Errorf("objects %v, want the WorkflowTemplate", c.Objects)
	}
	var skipped []string
	for _, s := range c.Skipped {
		skipped = append(skipped, s.Source+":"+s.Kind)
	}
	if got, want := strings.Join(skipped, " "), "bad.yaml:Workflow cron.yaml:CronWorkflow"; got != want {
		t.Errorf("skipped %q, want %q", got, want)
	}
	if _, err := c.Select("hello", "nosuch"); err == nil {
		t.Error("selecting an unknown case did not fail")
	}
	own := &Corpus{Cases: []Case{{Name: "hello", Origin: OriginOwn}}}
	if _, err := c.Merge(own); err == nil || !strings.Contains(err.Error(), `case "hello" is in argo-examples and in own`) {
		t.Errorf("merging a corpus with a case of the same name: err %v, want it named", err)
	}
}

func TestTheReportCountsEachOriginApartAndTheBarOnArgosExamplesOnly(t *testing.T) {
	c := &Corpus{Cases: []Case{
		{Name: "a", Origin: OriginArgoExamples}, {Name: "b", Origin: OriginArgoExamples}, {Name: "mine", Origin: OriginOwn},
	}}
	obs := func(phase string) Observation {
		return Observation{Phase: phase, Nodes: map[string]string{"x": "x Pod " + phase}}
	}
	argo := []Observation{obs("Succeeded"), obs("Succeeded"), obs("Succeeded")}
	wfg := []Observation{obs("Succeeded"), obs("Failed"), obs("Succeeded")}
	for i := range argo {
		argo[i].Case, wfg[i].Case = c.Cases[i].Name, c.Cases[i].Name
	}
	r, err := NewReport("v3.7.9", c, argo, wfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Percent(); got != 50 {
		t.Errorf("the bar's share is %.1f%%, want 50%% (one of argo's two examples; the own case does not count)", got)
	}
	want := map[Origin]Tally{OriginArgoExamples: {Cases: 2, Same: 1}, OriginOwn: {Cases: 1, Same: 1}}
	for o, w := range want {
		if got := r.Origins[o]; got != w {
			t.Errorf("tally of %s: %+v, want %+v", o, got, w)
		}
	}
}

func TestNormalizeHidesOnlyWhatDiffersBetweenTwoRuns(t *testing.T) {
	const uid = "0f3c2a9e-1111-2222-3333-444455556666"
	for _, tc := range []struct{ sentence, in, want string }{
		{"the workflow's UID", "owner " + uid, "owner <uid>"},
		{"a timestamp", "at 2026-12-03T18:00:01Z", "at <time>"},
		{"a duration in argo's %f format", "exit-handlers Failed 10.309499.", "exit-handlers Failed <seconds>."},
		{"the API server's token volume suffix", "kube-api-access-7sm4w", "kube-api-access-<random>"},
		{"but not a version or a short number", "busybox:1.36 and 3.5", "busybox:1.36 and 3.5"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := normalize(tc.in, uid); got != tc.want {
				t.Fatalf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
