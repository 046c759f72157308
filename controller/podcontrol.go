package controller

import (
	"context"
	"fmt"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podidentity"
)

// podControl is the engine's pod I/O against the API server.
type podControl struct {
	kube    kubernetes.Interface
	metrics *metrics
}

// CreatePod creates a pod. A pod of the same name that belongs to this workflow UID is success (a pass
// that created it was not persisted); one of another UID is never adopted: engine.PodNameTakenError, on
// which the node waits for that pod to go.
func (pc *podControl) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	// The pod of the same name can go between our create and our read (an earlier workflow's pod being
	// released): then the create is simply tried again.
	for range 3 {
		_, err := pc.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			pc.metrics.podsCreated.Inc()
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		existing, getErr := pc.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			continue
		}
		if getErr != nil {
			return fmt.Errorf("pod %s already exists and reading it failed: %w", pod.Name, getErr)
		}
		if !sameNodePod(pod, existing) {
			return &engine.PodNameTakenError{Namespace: pod.Namespace, Name: pod.Name, OwnerUID: existing.Labels[podspec.LabelWorkflowUID]}
		}
		return nil
	}
	// Still coming and going: wait like for any earlier pod, and try again on the next pass.
	return &engine.PodNameTakenError{Namespace: pod.Namespace, Name: pod.Name, OwnerUID: "unknown"}
}

// sameNodePod reports whether existing is the pod we meant to create: podidentity's rule against the
// workflow and node of want. A look-alike that would pass only the create (and then be ignored by the pod
// lister, so the node errored as "pod deleted") is a taken name instead.
func sameNodePod(want, existing *corev1.Pod) bool {
	owner, ok := podidentity.ClaimedOwner(want)
	return ok && podidentity.Check(owner, nil, existing) == podidentity.Match &&
		existing.Annotations[common.AnnotationKeyNodeID] == want.Annotations[common.AnnotationKeyNodeID]
}

// StopPod lowers activeDeadlineSeconds to 1, so the kubelet ends the pod (reason DeadlineExceeded).
func (pc *podControl) StopPod(ctx context.Context, pod *corev1.Pod) error {
	patch := []byte(`{"spec":{"activeDeadlineSeconds":1}}`)
	_, err := pc.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		pc.metrics.podsStopped.Inc()
	}
	return err
}

// DeletePod deletes a pod (with its UID as precondition); a pod already gone is success.
func (pc *podControl) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	err := pc.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
