package doctor_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/doctor"
	"github.com/wfguard/wfguard/inspect"
)

// want is one expected finding: check, object and the repair it offers ("" for none).
type want struct{ check, object, repair string }

func (w want) String() string { return fmt.Sprintf("%s %s %s", w.check, w.object, w.repair) }

func found(r doctor.Report) []want {
	var out []want
	for _, c := range r.Checks {
		for _, f := range c.Findings {
			w := want{check: c.Name, object: f.Object}
			if f.Repair != nil {
				w.repair = f.Repair.Kind
			}
			out = append(out, w)
		}
	}
	return sortWants(out)
}

func sortWants(ws []want) []want {
	sort.Slice(ws, func(i, j int) bool { return ws[i].String() < ws[j].String() })
	return ws
}

func skipped(r doctor.Report) []string {
	var out []string
	for _, c := range r.Checks {
		for _, s := range c.Skipped {
			out = append(out, c.Name+": "+s)
		}
	}
	return out
}

func nodeObject(wf *wfv1.Workflow, suffix string) string {
	return fmt.Sprintf("node %s (%s)", wf.Name+suffix, wf.NodeID(wf.Name+suffix))
}

func podObject(wf *wfv1.Workflow, suffix string) string { return "pod/" + wf.NodeID(wf.Name+suffix) }

// steps are the nodes of spec up to the first step group, with the given produce node.
func steps(e *env, produce node, more ...node) []node {
	nodes := []node{
		{name: "", typ: wfv1.NodeTypeSteps, phase: wfv1.NodeRunning, template: "main", started: e.start.Add(-30 * time.Minute), children: []string{"[0]"}},
		{name: "[0]", typ: wfv1.NodeTypeStepGroup, phase: wfv1.NodeRunning, started: e.start.Add(-30 * time.Minute), children: []string{"[0].produce"}},
		produce,
	}
	return append(nodes, more...)
}

func outParam(v string) *wfv1.Outputs {
	return &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr(v)}}}
}

var scenarios = []struct {
	name  string
	build func(e *env) []want
}{
	{"a healthy running workflow has no problem", func(e *env) []want {
		wf := e.workflow("healthy", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning,
			template: "produce", synced: boolPtr(false), started: e.start.Add(-2 * time.Minute)}), nil)
		e.pod(wf, "[0].produce", true, running(e.start.Add(-time.Minute)))
		e.result(wf, "[0].produce", false, nil)
		return nil
	}},
	{"a node Succeeded without its declared output (partial success)", func(e *env) []want {
		wf := e.workflow("partial", wfv1.WorkflowSucceeded, []node{
			{name: "", typ: wfv1.NodeTypeSteps, phase: wfv1.NodeSucceeded, template: "main", started: e.start.Add(-30 * time.Minute), finished: e.start.Add(-20 * time.Minute), children: []string{"[0]"}},
			{name: "[0]", typ: wfv1.NodeTypeStepGroup, phase: wfv1.NodeSucceeded, started: e.start.Add(-30 * time.Minute), finished: e.start.Add(-20 * time.Minute), children: []string{"[0].produce", "[0].other"}},
			{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeSucceeded, template: "produce", synced: boolPtr(true), started: e.start.Add(-30 * time.Minute), finished: e.start.Add(-21 * time.Minute)},
			{name: "[0].other", typ: wfv1.NodeTypePod, phase: wfv1.NodeSucceeded, template: "produce", synced: boolPtr(true), started: e.start.Add(-30 * time.Minute), finished: e.start.Add(-21 * time.Minute), outputs: outParam("1")},
		}, nil)
		return []want{{doctor.CheckPartialSuccess, nodeObject(wf, "[0].produce"), ""}}
	}},
	{"a pod of a deleted workflow still holds the status finalizer", func(e *env) []want {
		wf := e.workflow("deleted", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning,
			template: "produce", synced: boolPtr(false), started: e.start.Add(-2 * time.Minute)}), nil)
		e.pod(wf, "[0].produce", true, running(e.start.Add(-time.Minute)))
		e.deleteWorkflow(wf)
		return []want{{doctor.CheckFinalizerHeld, podObject(wf, "[0].produce"), doctor.RepairReleaseFinalizer}}
	}},
	{"a WorkflowAction stays Pending past the threshold", func(e *env) []want {
		e.action("resume-1", "nothing", actionsv1.ActionResume)
		return []want{{doctor.CheckStaleAction, "workflowaction/resume-1", ""}}
	}},
	{"a node's pod is gone and its task result is a placeholder", func(e *env) []want {
		wf := e.workflow("podgone", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning,
			template: "produce", synced: boolPtr(false), started: e.start.Add(-2 * time.Minute),
			waitingSince: e.start}), nil)
		e.result(wf, "[0].produce", false, nil)
		return []want{{doctor.CheckIncompleteResult, nodeObject(wf, "[0].produce"), doctor.RepairFinalizeResult}}
	}},
	{"a pod ended long ago and its node never recorded it", func(e *env) []want {
		wf := e.workflow("unobserved", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning,
			template: "produce", synced: boolPtr(false), started: e.start.Add(-30 * time.Minute)}), nil)
		e.pod(wf, "[0].produce", true, ended(corev1.PodSucceeded, e.start.Add(-20*time.Minute)))
		e.result(wf, "[0].produce", false, nil)
		return []want{
			{doctor.CheckIncompleteResult, nodeObject(wf, "[0].produce"), ""},
			{doctor.CheckNotReconciled, "workflow/" + wf.Name, ""},
		}
	}},
	{"the executor's service account may not write task results", func(e *env) []want {
		e.workflow("rbac", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodePending,
			template: "produce", synced: boolPtr(false), started: e.start}), func(wf *wfv1.Workflow) { wf.Spec.ServiceAccountName = "reporter" })
		return []want{{doctor.CheckExecutorRBAC, "serviceaccount/reporter", ""}}
	}},
	{"a pod holds the finalizer long after its node is final", func(e *env) []want {
		wf := e.workflow("held", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeSucceeded,
			template: "produce", synced: boolPtr(true), started: e.start.Add(-20 * time.Minute), finished: e.start.Add(-10 * time.Minute), outputs: outParam("1")}), nil)
		e.pod(wf, "[0].produce", true, ended(corev1.PodSucceeded, e.start.Add(-10*time.Minute)))
		e.result(wf, "[0].produce", true, outParam("1"))
		return []want{{doctor.CheckFinalizerHeld, podObject(wf, "[0].produce"), ""}}
	}},
}

func TestDoctorFindsExactlyEachProblemBuiltOnPurpose(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := newEnv(t, true)
			wanted := sortWants(sc.build(e))
			report := e.audit()
			if got := found(report); !slices.Equal(got, wanted) {
				t.Errorf("findings:\n got %v\nwant %v", got, wanted)
			}
			if s := skipped(report); len(s) > 0 {
				t.Errorf("an admin's audit skipped: %v", s)
			}
			wantCode := doctor.ExitClean
			if len(wanted) > 0 {
				wantCode = doctor.ExitProblems
			}
			if code := doctor.ExitCode(doctor.Result{Report: report}); code != wantCode {
				t.Errorf("exit code %d, want %d", code, wantCode)
			}
		})
	}
}

// versions records every object's resourceVersion in the namespace, to prove a dry run wrote nothing.
func (e *env) versions() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	pods, err := e.kube.CoreV1().Pods(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["pod/"+p.Name] = p.ResourceVersion
	}
	results, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range results.Items {
		out["result/"+r.Name] = r.ResourceVersion
	}
	wfs, err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, w := range wfs.Items {
		out["workflow/"+w.Name] = w.ResourceVersion
	}
	events, err := e.kube.CoreV1().Events(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out["events"] = fmt.Sprint(len(events.Items))
	return out
}

func (e *env) events(reason string) []corev1.Event {
	e.t.Helper()
	list, err := e.kube.CoreV1().Events(e.ns).List(e.t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", reason).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func TestFixIsADryRunUntilYesThenRepairsOnlyWhatIsSafe(t *testing.T) {
	cases := []struct {
		scenario string
		reason   string
		repaired func(e *env) string // "" when the object is repaired, else what is wrong
	}{
		{"a pod of a deleted workflow still holds the status finalizer", doctor.ReasonFinalizerReleased, func(e *env) string {
			pods, err := e.kube.CoreV1().Pods(e.ns).List(e.t.Context(), metav1.ListOptions{})
			if err != nil || len(pods.Items) != 1 {
				return fmt.Sprintf("pods: %v %v", pods, err)
			}
			if f := pods.Items[0].Finalizers; len(f) != 0 {
				return fmt.Sprintf("the pod still has finalizers %v", f)
			}
			return ""
		}},
		{"a node's pod is gone and its task result is a placeholder", doctor.ReasonResultFinalized, func(e *env) string {
			list, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).List(e.t.Context(), metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				return fmt.Sprintf("results: %v %v", list, err)
			}
			r := list.Items[0]
			if r.Labels[common.LabelKeyReportOutputsCompleted] != "true" || r.Annotations[doctor.AnnotationFinalizedBy] != "wfguard doctor" {
				return fmt.Sprintf("the result is not finalized: labels %v annotations %v", r.Labels, r.Annotations)
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			e := newEnv(t, true)
			for _, sc := range scenarios {
				if sc.name == tc.scenario {
					sc.build(e)
				}
			}
			report := e.audit()
			if len(report.Repairs()) != 1 {
				t.Fatalf("repairs %v, want one", report.Repairs())
			}
			before := e.versions()
			dry := doctor.Fix(t.Context(), e.clients, report, false, e.now())
			if len(dry) != 1 || dry[0].Applied {
				t.Errorf("dry run outcomes %+v", dry)
			}
			if after := e.versions(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the dry run changed objects:\nbefore %v\nafter  %v", before, after)
			}
			if problem := tc.repaired(e); problem == "" {
				t.Fatal("repaired before --yes")
			}

			applied := doctor.Fix(t.Context(), e.clients, report, true, e.now())
			if len(applied) != 1 || !applied[0].Applied || applied[0].Error != "" {
				t.Fatalf("outcomes %+v", applied)
			}
			if problem := tc.repaired(e); problem != "" {
				t.Error(problem)
			}
			if evs := e.events(tc.reason); len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal || !strings.Contains(evs[0].Message, "wfguard doctor") {
				t.Errorf("audit events %+v", evs)
			}
			if got := found(e.audit()); len(got) != 0 {
				t.Errorf("after the repair the audit still finds %v", got)
			}
			// A second --yes finds nothing to do: every repair is re-verified against a fresh read.
			again := doctor.Fix(t.Context(), e.clients, report, true, e.now())
			if len(again) != 1 || again[0].Applied || again[0].Note == "" {
				t.Errorf("a repeated repair was not refused: %+v", again)
			}
		})
	}
}

func TestARepairIsRefusedWhenTheStateChangedSinceTheAudit(t *testing.T) {
	e := newEnv(t, true)
	wf := e.workflow("racy", wfv1.WorkflowRunning, steps(e, node{name: "[0].produce", typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning,
		template: "produce", synced: boolPtr(false), started: e.start.Add(-2 * time.Minute),
		waitingSince: e.start}), nil)
	e.result(wf, "[0].produce", false, nil)
	report := e.audit()
	// Meanwhile a pod for the node appears (e.g. the audit raced a controller): finalizing is unsafe.
	e.pod(wf, "[0].produce", true, running(e.start))
	before := e.versions()
	out := doctor.Fix(t.Context(), e.clients, report, true, e.now())
	if len(out) != 1 || out[0].Applied || out[0].Note != "the node's pod exists" {
		t.Errorf("outcomes %+v", out)
	}
	if after := e.versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused repair changed objects:\nbefore %v\nafter  %v", before, after)
	}
}

func TestUnreachableAPIServerSkipsEveryCheckWithOneLine(t *testing.T) {
	config := cp.Config()
	config.Host = "https://127.0.0.1:1"
	config.Timeout = 5 * time.Second
	clients, err := inspect.NewClients(config)
	if err != nil {
		t.Fatal(err)
	}
	report := doctor.Audit(t.Context(), clients, doctor.Options{Namespace: "default"})
	if len(report.Checks) != 7 {
		t.Fatalf("checks %v", report.Checks)
	}
	for _, ch := range report.Checks {
		if len(ch.Findings) != 0 || len(ch.Skipped) != 1 || !strings.Contains(ch.Skipped[0], "cannot reach the API server https://127.0.0.1:1: API server unreachable") {
			t.Errorf("%s: %+v", ch.Name, ch)
		}
	}
	if code := doctor.ExitCode(doctor.Result{Report: report}); code != doctor.ExitIncomplete {
		t.Errorf("exit code %d, want %d", code, doctor.ExitIncomplete)
	}
}
