package controller

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pdbControl is the engine's PodDisruptionBudget I/O against the API server.
type pdbControl struct{ kube kubernetes.Interface }

// CreatePDB creates a budget; one of the same name already there is success, as argo takes it (a pass
// that created it was not persisted).
func (c pdbControl) CreatePDB(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, err := c.kube.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(ctx, pdb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// DeletePDB deletes a budget; one already gone is success.
func (c pdbControl) DeletePDB(ctx context.Context, namespace, name string) error {
	err := c.kube.PolicyV1().PodDisruptionBudgets(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
