package engine

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/internal/apierror"
)

// PDBControl is the engine's I/O for spec.podDisruptionBudget.
type PDBControl interface {
	// CreatePDB creates a budget; one of the same name already there is success, as in argo.
	CreatePDB(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error
	// DeletePDB deletes a budget; one already gone is success.
	DeletePDB(ctx context.Context, namespace, name string) error
}

// ensurePDB creates the workflow's PodDisruptionBudget as argo does when it starts the workflow. A
// transient API error retries the pass (argo requeues); any other ends the workflow Error, where argo would
// requeue it forever.
func (e *Engine) ensurePDB(ctx context.Context, p *Pass) (bool, error) {
	wf := p.WF
	if execSpec(wf).PodDisruptionBudget == nil {
		return true, nil
	}
	err := fmt.Errorf("no PodDisruptionBudget client is configured")
	if e.PDBs != nil {
		err = e.PDBs.CreatePDB(ctx, budgetFor(wf))
	}
	if err != nil && apierror.Transient(err) {
		return false, fmt.Errorf("creating the PodDisruptionBudget of %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	if err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, "PDB creation failed: "+err.Error())
		return false, nil
	}
	return true, nil
}

// budgetFor is argo's budget for wf: named after it, labelled with it and owned by it, selecting its pods
// unless the spec has a selector.
func budgetFor(wf *wfv1.Workflow) *policyv1.PodDisruptionBudget {
	labels := map[string]string{common.LabelKeyWorkflow: wf.Name}
	spec := execSpec(wf).PodDisruptionBudget.DeepCopy()
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{common.LabelKeyWorkflow: wf.Name}}
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:            wf.Name,
			Namespace:       wf.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(wf, wfv1.SchemeGroupVersion.WithKind("Workflow"))},
		},
		Spec: *spec,
	}
}

// deletePDB deletes a workflow's budget once it completed, as argo does in the pass that completes it; a
// delete that fails errors the workflow with the error, as argo's does.
func (e *Engine) deletePDB(ctx context.Context, p *Pass) {
	wf := p.WF
	if execSpec(wf).PodDisruptionBudget == nil || e.PDBs == nil {
		return
	}
	if err := e.PDBs.DeletePDB(ctx, wf.Namespace, wf.Name); err != nil {
		wf.Status.Phase = wfv1.WorkflowError
		wf.Status.Message = err.Error()
		setLabel(wf, common.LabelKeyPhase, string(wfv1.WorkflowError))
	}
}
