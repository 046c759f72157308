package actions

import (
	"fmt"
	"strings"
	"testing"

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
