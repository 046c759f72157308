package engine

import (
	"context"
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/provenance"
)

// AnnotationStartSeal proves the controller validated and started the workflow: a seal of the record key
// over its UID. The Workflow CRD has no status subresource, so whoever may create a workflow may create it
// with a status: "Pending" or "Running" made Start skip everything it checks when a workflow is first seen
// (workflowRestrictions, argo's validation, what wfguard does not run), and a status.storedWorkflowSpec made
// a workflowTemplateRef run other templates than the template's. A workflow without the seal is checked as
// one the controller did not start.
const AnnotationStartSeal = "wfguard.io/start-seal"

// startSealed reports whether this controller started the workflow (always, without a record key).
func (e *Engine) startSealed(p *Pass) bool {
	if e.RecordKey == nil {
		return true
	}
	return e.RecordKey.Verify(p.WF.Annotations[AnnotationStartSeal], provenance.PurposeWorkflowStart, string(p.WF.UID))
}

// sealStart marks the workflow as validated and started by this controller.
func (e *Engine) sealStart(p *Pass) {
	if e.RecordKey == nil || e.startSealed(p) {
		return
	}
	if p.WF.Annotations == nil {
		p.WF.Annotations = map[string]string{}
	}
	p.WF.Annotations[AnnotationStartSeal] = e.RecordKey.Seal(provenance.PurposeWorkflowStart, string(p.WF.UID))
}

// checkNotStartedHere applies to a running workflow this controller did not start what Start applies to a
// new one: the ConfigMap's workflowRestrictions, argo's validation and wfguard's own checks on what runs,
// and, where workflows must reference a template, that the stored spec is the one the template gives. It
// returns why the workflow cannot run, "" when it can; an error is transient.
func (e *Engine) checkNotStartedHere(ctx context.Context, p *Pass) (string, error) {
	cfg := e.controllerConfig()
	if err := checkRestrictions(cfg, p.WF); err != nil {
		return err.Error(), nil
	}
	if cfg.WorkflowRestrictions.MustUseReference() {
		why, err := e.storedSpecFromTemplate(ctx, p)
		if why != "" || err != nil {
			return why, err
		}
	}
	// Validated as submitted: the size bound and argo's validation are about the spec, not the status.
	submitted := &Pass{WF: p.WF.DeepCopy()}
	submitted.WF.Status = wfv1.WorkflowStatus{StoredWorkflowSpec: p.WF.Status.StoredWorkflowSpec}
	if err := e.validate(submitted); err != nil {
		if apierror.Transient(err) {
			return "", fmt.Errorf("validating workflow %s/%s: %w", p.WF.Namespace, p.WF.Name, err)
		}
		return "invalid spec: " + err.Error(), nil
	}
	return "", nil
}

// storedSpecFromTemplate says why the workflow's status.storedWorkflowSpec is not what its
// workflowTemplateRef gives today ("" when it is, or when none is stored). Arguments may differ: a Retry
// with parameters changes them.
func (e *Engine) storedSpecFromTemplate(ctx context.Context, p *Pass) (string, error) {
	stored := p.WF.Status.StoredWorkflowSpec
	if stored == nil || p.WF.Spec.WorkflowTemplateRef == nil {
		return "", nil
	}
	fresh := &Pass{WF: p.WF.DeepCopy()}
	fresh.WF.Status.StoredWorkflowSpec = nil
	if err := e.storeWorkflowTemplateSpec(ctx, fresh); err != nil {
		if apierror.Transient(err) {
			return "", fmt.Errorf("reading the workflow template of %s/%s: %w", p.WF.Namespace, p.WF.Name, err)
		}
		return err.Error(), nil
	}
	same, err := sameButArguments(stored, fresh.WF.Status.StoredWorkflowSpec)
	if err != nil {
		return "", err
	}
	if !same {
		return fmt.Sprintf("its status.storedWorkflowSpec is not the spec workflow template %s gives, and workflows must use a template (workflowRestrictions)",
			p.WF.Spec.WorkflowTemplateRef.Name), nil
	}
	return "", nil
}

func sameButArguments(a, b *wfv1.WorkflowSpec) (bool, error) {
	encode := func(s *wfv1.WorkflowSpec) ([]byte, error) {
		c := s.DeepCopy()
		c.Arguments = wfv1.Arguments{}
		return json.Marshal(c)
	}
	ea, err := encode(a)
	if err != nil {
		return false, err
	}
	eb, err := encode(b)
	if err != nil {
		return false, err
	}
	return string(ea) == string(eb), nil
}
