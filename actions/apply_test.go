package actions

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/extstatus"
)

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
