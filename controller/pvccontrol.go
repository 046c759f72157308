package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pvcProtectionFinalizer keeps a claim while a pod still references it; argo lifts it when it deletes a
// completed workflow's claims, whose pods are done but may stay for podGC.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// pvcControl is the engine's volume claim I/O against the API server.
type pvcControl struct{ kube kubernetes.Interface }

// CreatePVC creates a claim. One of the same name owned by the same workflow (a pass that created it was
// not persisted) is success; one owned by anything else is refused, as argo refuses it.
func (c pvcControl) CreatePVC(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	claims := c.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	_, err := claims.Create(ctx, pvc, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pvc %s already exists and reading it failed: %w", pvc.Name, err)
	}
	if !sameOwner(pvc, existing) {
		return fmt.Errorf("%s pvc already exists with different ownerreference", pvc.Name) // argo's message
	}
	return nil
}

func sameOwner(want, existing *corev1.PersistentVolumeClaim) bool {
	for _, w := range want.OwnerReferences {
		for _, o := range existing.OwnerReferences {
			if o.UID == w.UID {
				return true
			}
		}
	}
	return false
}

// DeletePVC deletes a claim and lifts its pvc-protection finalizer, so it goes now rather than when the
// workflow's completed pods are deleted (argo's default, ARGO_REMOVE_PVC_PROTECTION_FINALIZER). A claim
// already gone is success.
func (c pvcControl) DeletePVC(ctx context.Context, namespace, name string) error {
	claims := c.kube.CoreV1().PersistentVolumeClaims(namespace)
	if err := claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	pvc, err := claims.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading deleted pvc %s to lift %s: %w", name, pvcProtectionFinalizer, err)
	}
	if !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer) {
		return nil
	}
	pvc.Finalizers = slices.DeleteFunc(pvc.Finalizers, func(f string) bool { return f == pvcProtectionFinalizer })
	if _, err := claims.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("lifting %s from pvc %s: %w", pvcProtectionFinalizer, name, err)
	}
	return nil
}
