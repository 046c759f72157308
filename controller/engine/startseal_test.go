package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/provenance"
)

// strictConfig is a controller config that requires a workflowTemplateRef.
type strictConfig struct{}

func (strictConfig) Current() *config.Config {
	return &config.Config{WorkflowRestrictions: &config.WorkflowRestrictions{TemplateReferencing: config.TemplateReferencingStrict}}
}

func TestAWorkflowTheControllerDidNotStartIsCheckedAsANewOne(t *testing.T) {
	key, err := provenance.NewKey(bytes.Repeat([]byte{4}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	seal := func(wf *wfv1.Workflow) {
		wf.Annotations = map[string]string{AnnotationStartSeal: key.Seal(provenance.PurposeWorkflowStart, string(wf.UID))}
	}
	for _, tc := range []struct {
		sentence string
		key      *provenance.Key
		change   func(*wfv1.Workflow)
		refused  string // part of the message it ends Error with; "" when it is carried on
	}{
		{"an inline workflow not started here is refused where workflows must reference a template", key, func(*wfv1.Workflow) {},
			ReferenceModeMessage},
		{"one the controller started (its seal) is carried on", key, seal, ""},
		{"a seal of another workflow does not count", key, func(wf *wfv1.Workflow) {
			other := wf.DeepCopy()
			other.UID = "other"
			seal(other)
			wf.Annotations = other.Annotations
		}, ReferenceModeMessage},
		{"without a record key a workflow's status is trusted, as before", nil, func(*wfv1.Workflow) {}, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := &Engine{Pods: &stopRecorder{}, Config: strictConfig{}, RecordKey: tc.key}
			p := adoptionPass(t, true, tc.change)
			started, err := e.Start(p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused == "" {
				if !started || p.WF.Status.Phase != wfv1.WorkflowRunning {
					t.Fatalf("started %v, phase %s %q; want it carried on", started, p.WF.Status.Phase, p.WF.Status.Message)
				}
				return
			}
			if started || p.WF.Status.Phase != wfv1.WorkflowError || !strings.Contains(p.WF.Status.Message, tc.refused) {
				t.Fatalf("started %v, phase %s %q; want Error naming %q", started, p.WF.Status.Phase, p.WF.Status.Message, tc.refused)
			}
		})
	}
}

func TestAWorkflowItChecksAndCarriesOnIsSealedOnce(t *testing.T) {
	key, err := provenance.NewKey(bytes.Repeat([]byte{4}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Pods: &stopRecorder{}, RecordKey: key}
	p := adoptionPass(t, true, func(*wfv1.Workflow) {})
	if started, err := e.Start(p); err != nil || !started {
		t.Fatalf("Start = %v, %v; want the valid workflow carried on", started, err)
	}
	if !key.Verify(p.WF.Annotations[AnnotationStartSeal], provenance.PurposeWorkflowStart, string(p.WF.UID)) {
		t.Fatalf("annotations %v: want the start seal, so the next restart does not check it again", p.WF.Annotations)
	}
}
