package engine

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/internal/apierror"
)

// PVCControl is the engine's I/O for spec.volumeClaimTemplates.
type PVCControl interface {
	// CreatePVC creates a claim; one of the same name owned by the same workflow UID is success, one owned
	// by anything else is an error (never adopted).
	CreatePVC(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error
	// DeletePVC deletes a claim; one already gone is success.
	DeletePVC(ctx context.Context, namespace, name string) error
}

// ensurePVCs creates the workflow's volumeClaimTemplates as argo does, once, before any pod: each claim is
// named <workflow>-<claim>, labelled with the workflow and owned by it, and recorded in
// status.persistentVolumeClaims as the volume pods mount by the claim template's name. A transient API
// error retries the pass; any other error ends the workflow Error ("pvc create error: ...").
func (e *Engine) ensurePVCs(ctx context.Context, p *Pass) error {
	wf := p.WF
	claims := wf.Spec.VolumeClaimTemplates
	if len(claims) == len(wf.Status.PersistentVolumeClaims) {
		return nil
	}
	var volumes []corev1.Volume
	for i := range claims {
		pvc, err := claimFor(wf, i)
		if err == nil && e.PVCs == nil {
			err = fmt.Errorf("cannot create pvc %s: no PVC client is configured", pvc.Name)
		}
		if err == nil {
			err = e.PVCs.CreatePVC(ctx, pvc)
		}
		if err != nil && apierror.Transient(err) {
			return &apiError{fmt.Errorf("creating the volume claims of %s/%s: %w", wf.Namespace, wf.Name, err)}
		}
		if err != nil {
			e.completeWorkflow(p, wfv1.WorkflowError, "pvc create error: "+err.Error())
			return nil
		}
		volumes = append(volumes, corev1.Volume{Name: claims[i].Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name},
		}})
	}
	wf.Status.PersistentVolumeClaims = volumes
	return nil
}

// claimFor is volumeClaimTemplates[i] as the claim to create for wf.
func claimFor(wf *wfv1.Workflow, i int) (*corev1.PersistentVolumeClaim, error) {
	tmpl := wf.Spec.VolumeClaimTemplates[i]
	if tmpl.Name == "" {
		return nil, fmt.Errorf("volumeClaimTemplates[%d].metadata.name is required", i) // argo's message
	}
	pvc := tmpl.DeepCopy()
	pvc.Name = wf.Name + "-" + tmpl.Name
	pvc.Namespace = wf.Namespace
	pvc.ResourceVersion, pvc.UID = "", ""
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	pvc.Labels[common.LabelKeyWorkflow] = wf.Name
	pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(wf, wfv1.SchemeGroupVersion.WithKind("Workflow"))}
	return pvc, nil
}

// collectPVCs deletes a completed workflow's claims per spec.volumeClaimGC: OnSuccess (the default) only
// when it Succeeded, keeping them for a retry of a failed workflow; OnWorkflowCompletion always. Like argo
// this is best effort: a claim that could not be deleted stays in status (its owner reference still
// takes it with the workflow) and the error is returned to be logged, not to fail the pass.
func (e *Engine) collectPVCs(ctx context.Context, p *Pass) error {
	wf := p.WF
	if !wf.Status.Phase.Completed() || len(wf.Status.PersistentVolumeClaims) == 0 || e.PVCs == nil {
		return nil
	}
	switch strategy := execSpec(wf).GetVolumeClaimGC().GetStrategy(); strategy {
	case wfv1.VolumeClaimGCOnSuccess:
		if wf.Status.Phase != wfv1.WorkflowSucceeded {
			return nil
		}
	case wfv1.VolumeClaimGCOnCompletion:
	default:
		return fmt.Errorf("unknown volume gc strategy: %s", strategy) // argo's message
	}
	var kept []corev1.Volume
	var firstErr error
	for _, vol := range wf.Status.PersistentVolumeClaims {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		if err := e.PVCs.DeletePVC(ctx, wf.Namespace, vol.PersistentVolumeClaim.ClaimName); err != nil {
			kept = append(kept, vol)
			if firstErr == nil {
				firstErr = fmt.Errorf("deleting pvc %s of %s/%s: %w", vol.PersistentVolumeClaim.ClaimName, wf.Namespace, wf.Name, err)
			}
		}
	}
	wf.Status.PersistentVolumeClaims = kept
	return firstErr
}
