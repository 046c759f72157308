package actions

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
)

// approvalWith is a workflow suspended at node approve, whose answer output awaits a supplied value
// (stored on the node as the engine does) with the given default, if any.
func approvalWith(def *string) *wfv1.Workflow {
	vf := &wfv1.ValueFrom{Supplied: &wfv1.SuppliedValueFrom{}}
	if def != nil {
		vf.Default = wfv1.AnyStringPtr(*def)
	}
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{
		"approve": {ID: "approve", Name: "w[0].approve", DisplayName: "approve", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning,
			Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "answer", ValueFrom: vf}}}},
	}}}
}

func TestResumeSetsSuppliedOutputsOrTheirDefaultsAndRefusesWithoutEither(t *testing.T) {
	def := "maybe"
	for _, tc := range []struct {
		sentence   string
		wf         *wfv1.Workflow
		params     *v1alpha1.ResumeParameters
		wantPhase  v1alpha1.ActionPhase
		wantReason string
		wantAnswer string // "" = the node is not resumed
	}{
		{"a plain resume gives the output its default", approvalWith(&def), nil, v1alpha1.PhaseSucceeded, ReasonApplied, "maybe"},
		{"a supplied value wins over the default", approvalWith(&def),
			&v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": "yes"}}, v1alpha1.PhaseSucceeded, ReasonApplied, "yes"},
		{"a supplied value needs no default", approvalWith(nil),
			&v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=approve", OutputParameters: map[string]string{"answer": "no"}}, v1alpha1.PhaseSucceeded, ReasonApplied, "no"},
		{"a plain resume of an output with neither value nor default is refused and changes nothing", approvalWith(nil), nil,
			v1alpha1.PhaseFailed, ReasonMissingOutputParameter, ""},
		{"a resume setting another parameter still leaves answer unset and is refused", approvalWith(nil),
			&v1alpha1.ResumeParameters{OutputParameters: map[string]string{"other": "x"}}, v1alpha1.PhaseFailed, ReasonMissingOutputParameter, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			before := tc.wf.DeepCopy()
			ext := &extstatus.Extensions{}
			out := Apply(tc.wf, ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: "w"},
				Action: v1alpha1.ActionResume, Resume: tc.params}}, metav1.Now())
			if out.Phase != tc.wantPhase || out.Reason != tc.wantReason {
				t.Fatalf("outcome = %+v, want %s/%s", out, tc.wantPhase, tc.wantReason)
			}
			n := tc.wf.Status.Nodes["approve"]
			if tc.wantAnswer == "" {
				if n.Phase != wfv1.NodeRunning || ext.Suspended != nil || n.Outputs.Parameters[0].Value != nil ||
					n.Outputs.Parameters[0].ValueFrom == nil || len(n.Outputs.Parameters) != len(before.Status.Nodes["approve"].Outputs.Parameters) {
					t.Fatalf("a refused resume changed the workflow: %+v", n)
				}
				if want := "node w[0].approve: raw output parameter 'answer' has not been set and does not have a default value; resume it with outputParameters"; out.Message != want {
					t.Errorf("message = %q, want %q", out.Message, want)
				}
				return
			}
			if n.Phase != wfv1.NodeSucceeded {
				t.Fatalf("node %s, want Succeeded", n.Phase)
			}
			var got []string
			for _, p := range n.Outputs.Parameters {
				if p.Name == "answer" && p.Value != nil && p.ValueFrom == nil {
					got = append(got, p.Value.String())
				}
			}
			if len(got) != 1 || got[0] != tc.wantAnswer {
				t.Errorf("answer = %v, want exactly [%s] with no valueFrom left", got, tc.wantAnswer)
			}
		})
	}
}

func TestOutcomesAreBoundedWhateverTheActionCarries(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	suspendedAt := func() *wfv1.Workflow {
		wf := &wfv1.Workflow{}
		wf.Name = "wf"
		wf.Status.Phase = wfv1.WorkflowRunning
		wf.Status.Nodes = wfv1.Nodes{"n": {ID: "n", Name: "wf[0].approve", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning}}
		return wf
	}
	for _, tc := range []struct {
		sentence string
		spec     v1alpha1.WorkflowActionSpec
		reason   string
	}{
		{"a 1 MiB resume selector that does not parse", v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume,
			Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: huge}}, ReasonInvalidNodeFieldSelector},
		{"a 1 MiB stop selector that matches nothing", v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionStop,
			Stop: &v1alpha1.StopParameters{NodeFieldSelector: "name=" + huge}}, ReasonNothingToStop},
		{"a 1 MiB output parameter", v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume,
			Resume: &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": huge}}}, ReasonInvalidOutputParameters},
		{"a 1 MiB action name", v1alpha1.WorkflowActionSpec{Action: huge}, ReasonUnknownAction},
		{"forty 30 KiB output parameters, each within the CRD's bounds, that the status could not store",
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume, Resume: &v1alpha1.ResumeParameters{OutputParameters: func() map[string]string {
				m := map[string]string{}
				for i := range 40 {
					m[fmt.Sprintf("p%d", i)] = strings.Repeat("y", 30<<10)
				}
				return m
			}()}}, ReasonInvalidOutputParameters},
	} {
		wf := suspendedAt()
		out := Apply(wf, &extstatus.Extensions{}, &v1alpha1.WorkflowAction{Spec: tc.spec}, metav1.Now())
		if out.Reason != tc.reason || len(out.Message) > MaxMessageLength+32 {
			t.Errorf("%s: %s with a %d-byte message, want %s within %d bytes", tc.sentence, out.Reason, len(out.Message), tc.reason, MaxMessageLength)
		}
		if n := wf.Status.Nodes["n"]; n.Phase != wfv1.NodeRunning {
			t.Errorf("%s: the suspend node became %s", tc.sentence, n.Phase)
		}
	}
	wf := suspendedAt()
	out := Apply(wf, &extstatus.Extensions{}, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionStop,
		Stop: &v1alpha1.StopParameters{NodeFieldSelector: "name=wf[0].approve", Message: huge}}}, metav1.Now())
	if n := wf.Status.Nodes["n"]; out.Reason != ReasonApplied || len(n.Message) > MaxMessageLength+32 {
		t.Errorf("a Stop with a 1 MiB message: %s, node message %d bytes, want applied within %d", out.Reason, len(n.Message), MaxMessageLength)
	}
}

// A write through argo's Go types (argo's CLI, server, UI) drops status.suspended and status.shutdown: an
// accepted Suspend, Stop or Terminate is mirrored into the spec field argo uses, which such a write keeps.
func TestAnAcceptedSuspendOrShutdownSurvivesAWriteThatDropsWfguardsStatus(t *testing.T) {
	for _, tc := range []struct {
		sentence     string
		action       string
		wantSuspend  bool
		wantShutdown wfv1.ShutdownStrategy
	}{
		{"a Suspend", v1alpha1.ActionSuspend, true, ""},
		{"a Stop", v1alpha1.ActionStop, false, wfv1.ShutdownStrategyStop},
		{"a Terminate", v1alpha1.ActionTerminate, false, wfv1.ShutdownStrategyTerminate},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := approvalWith(nil)
			ext := &extstatus.Extensions{}
			out := Apply(wf, ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: tc.action}}, metav1.Now())
			if out.Phase != v1alpha1.PhaseSucceeded {
				t.Fatalf("outcome %+v", out)
			}
			dropped := &extstatus.Extensions{} // what is left of wfguard's status after the foreign write
			if got := suspended(wf, dropped); got != tc.wantSuspend {
				t.Errorf("suspended after the write = %v, want %v", got, tc.wantSuspend)
			}
			if wf.Spec.Shutdown != tc.wantShutdown {
				t.Errorf("spec.shutdown = %q, want %q", wf.Spec.Shutdown, tc.wantShutdown)
			}
		})
	}
	t.Run("a Resume lifts the mirrored suspension too", func(t *testing.T) {
		yes := "yes"
		wf, ext := approvalWith(&yes), &extstatus.Extensions{}
		Apply(wf, ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionSuspend}}, metav1.Now())
		if out := Apply(wf, ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume}}, metav1.Now()); out.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("resume: %+v", out)
		}
		if suspended(wf, &extstatus.Extensions{}) || suspended(wf, ext) {
			t.Errorf("still suspended after a Resume: spec.suspend=%v status.suspended=%v", wf.Spec.Suspend, ext.Suspended)
		}
	})
}

func TestARepeatedActionSucceedsWithoutChangingAnything(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		sentence    string
		action      string
		ext         extstatus.Extensions
		wantMessage string
		unchanged   bool
	}{
		{"a Suspend of a suspended workflow succeeds and changes nothing", v1alpha1.ActionSuspend, extstatus.Extensions{Suspended: &yes},
			"workflow w was already suspended; nothing changed", true},
		{"a second Terminate succeeds and changes nothing", v1alpha1.ActionTerminate, extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyTerminate},
			"workflow w was already shutting down with strategy Terminate; nothing changed", true},
		{"a second Stop succeeds and changes nothing", v1alpha1.ActionStop, extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyStop},
			"workflow w was already shutting down with strategy Stop; nothing changed", true},
		{"a Terminate of a stopping workflow escalates it", v1alpha1.ActionTerminate, extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyStop},
			"workflow terminating", false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}}
			ext := tc.ext
			before := ext
			out := Apply(wf, &ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: "w"}, Action: tc.action}}, metav1.Now())
			if out.Phase != v1alpha1.PhaseSucceeded || out.Reason != ReasonApplied || out.Message != tc.wantMessage || out.Unchanged != tc.unchanged {
				t.Fatalf("outcome = %+v, want Succeeded/Applied %q, unchanged %t", out, tc.wantMessage, tc.unchanged)
			}
			if tc.unchanged && (ext.Shutdown != before.Shutdown || wf.Spec.Suspend != nil || wf.Spec.Shutdown != "") {
				t.Errorf("a no-op changed the workflow: shutdown %q, spec %+v", ext.Shutdown, wf.Spec)
			}
		})
	}
}

// twoApprovals is a workflow waiting at two suspend nodes, first and second, neither with outputs; suspended
// also sets spec.suspend, as a Suspend action does.
func twoApprovals(suspended bool) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{
		"a": {ID: "a", Name: "w[0].first", DisplayName: "first", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning, Message: "waiting"},
		"b": {ID: "b", Name: "w[1].second", DisplayName: "second", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning, Message: "waiting"},
	}}}
	if suspended {
		wf.Spec.Suspend = ptr(true)
	}
	return wf
}

func ptr[T any](v T) *T { return &v }

// outputsOf is n output parameters p0..p(n-1), each a value of size bytes.
func outputsOf(n, size int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("p%d", i)] = strings.Repeat("v", size)
	}
	return m
}

// Pins every outcome of a Resume, word for word, and what each leaves of the workflow: a refused one
// changes nothing, an applied one lifts the suspension only when no selector narrows it.
func TestEveryResumeOutcomeSaysExactlyWhatHappenedAndChangesOnlyWhatItSays(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	awaiting := approvalWith(nil)
	awaiting.Status.Nodes["other"] = wfv1.NodeStatus{ID: "other", Name: "w[1].other", DisplayName: "other", Type: wfv1.NodeTypeSuspend,
		Phase: wfv1.NodeRunning}
	for _, tc := range []struct {
		sentence    string
		wf          *wfv1.Workflow
		params      *v1alpha1.ResumeParameters
		wantReason  string
		wantMessage string
		wantResumed []string // the nodes now Succeeded
		wantLifted  bool     // the workflow's suspension is lifted
	}{
		{"a selector that does not parse", twoApprovals(true), &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName"},
			ReasonInvalidNodeFieldSelector, `nodeFieldSelector "displayName": invalid selector: 'displayName'; can't understand 'displayName'`, nil, false},
		{"more output parameters than the limit", twoApprovals(true), &v1alpha1.ResumeParameters{OutputParameters: outputsOf(65, 1)},
			ReasonInvalidOutputParameters, "65 outputParameters, more than the limit of 64", nil, false},
		{"an output parameter's value over the limit, the first by name reported", twoApprovals(true),
			&v1alpha1.ResumeParameters{OutputParameters: map[string]string{"z": strings.Repeat("v", MaxOutputParameterLength+1), "y": strings.Repeat("v", MaxOutputParameterLength+2)}},
			ReasonInvalidOutputParameters, `outputParameters "y": a 1-byte name and a 32770-byte value, more than the limits of 253 and 32768`, nil, false},
		{"an output parameter's name over the limit", twoApprovals(true),
			&v1alpha1.ResumeParameters{OutputParameters: map[string]string{strings.Repeat("n", 254): "v"}},
			ReasonInvalidOutputParameters, `outputParameters "` + strings.Repeat("n", 254) + `": a 254-byte name and a 1-byte value, more than the limits of 253 and 32768`, nil, false},
		{"outputs that every resumed node would store past the status's limit", twoApprovals(true),
			&v1alpha1.ResumeParameters{OutputParameters: outputsOf(5, 30<<10)}, ReasonInvalidOutputParameters,
			"outputParameters of 153610 bytes for 2 nodes would add 307220 bytes to the workflow's status, more than the limit of 262144", nil, false},
		{"a selector matching no node of a suspended workflow", twoApprovals(true), &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=third"},
			ReasonNothingToResume, "workflow w has nothing suspended to resume (no suspended workflow, no active suspend node matching)", nil, false},
		{"a workflow with neither suspension nor suspend node", &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, nil,
			ReasonNothingToResume, "workflow w has nothing suspended to resume (no suspended workflow, no active suspend node matching)", nil, false},
		{"one node's missing output refuses the whole resume", awaiting, nil, ReasonMissingOutputParameter,
			"node w[0].approve: raw output parameter 'answer' has not been set and does not have a default value; resume it with outputParameters", nil, false},
		{"a suspended workflow without suspend nodes", &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: wfv1.WorkflowSpec{Suspend: ptr(true)}}, nil,
			ReasonApplied, "resumed (0 suspend nodes)", nil, true},
		{"a plain resume resumes every node and the workflow", twoApprovals(true), &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"k": "v"}},
			ReasonApplied, "resumed (2 suspend nodes)", []string{"a", "b"}, true},
		{"a selector resumes its nodes and leaves the workflow suspended", twoApprovals(true), &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=second"},
			ReasonApplied, "resumed (1 suspend nodes)", []string{"b"}, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			before := tc.wf.DeepCopy()
			ext := &extstatus.Extensions{}
			out := Apply(tc.wf, ext, &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume, Resume: tc.params}}, now)
			if out.Reason != tc.wantReason || out.Message != tc.wantMessage {
				t.Fatalf("outcome = %s %q\nwant      %s %q", out.Reason, out.Message, tc.wantReason, tc.wantMessage)
			}
			if lifted := ext.Suspended != nil && !*ext.Suspended && tc.wf.Spec.Suspend == nil; lifted != tc.wantLifted {
				t.Errorf("suspension lifted = %t (status %v, spec %v), want %t", lifted, ext.Suspended, tc.wf.Spec.Suspend, tc.wantLifted)
			}
			if !tc.wantLifted && (ext.Suspended != nil || (tc.wf.Spec.Suspend == nil) != (before.Spec.Suspend == nil)) {
				t.Errorf("the suspension changed: status %v, spec %v", ext.Suspended, tc.wf.Spec.Suspend)
			}
			for id, n := range tc.wf.Status.Nodes {
				was := before.Status.Nodes[id]
				if !slices.Contains(tc.wantResumed, id) {
					if n.Phase != was.Phase || n.Message != was.Message || !n.FinishedAt.Equal(&was.FinishedAt) {
						t.Errorf("node %s changed: %s %q %v", id, n.Phase, n.Message, n.FinishedAt)
					}
					continue
				}
				if n.Phase != wfv1.NodeSucceeded || n.Message != "" || !n.FinishedAt.Equal(&now) {
					t.Errorf("node %s = %s %q finished %v, want Succeeded, no message, finished %v", id, n.Phase, n.Message, n.FinishedAt, now)
				}
				if tc.params != nil && len(tc.params.OutputParameters) > 0 && (n.Outputs == nil || len(n.Outputs.Parameters) != len(tc.params.OutputParameters)) {
					t.Errorf("node %s outputs = %+v, want the %d supplied", id, n.Outputs, len(tc.params.OutputParameters))
				}
			}
		})
	}
}
