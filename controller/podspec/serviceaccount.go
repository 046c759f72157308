package podspec

import (
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// addExecutorToken sets up the accounts as argo does after the pod's own volumes: an
// automountServiceAccountToken of false (template's, else workflow's) turns the pod's token off, and an
// executor ServiceAccount's token Secret becomes the volume exec-sa-token, which executorContainer mounts.
func (b *builder) addExecutorToken(pod *corev1.Pod) {
	if automount := automountServiceAccountToken(b.wf, b.tmpl); automount != nil && !*automount {
		pod.Spec.AutomountServiceAccountToken = automount
	}
	if ExecutorServiceAccount(b.wf, b.tmpl) == "" {
		return
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name:         common.ServiceAccountTokenVolumeName,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: b.in.ExecutorTokenSecret}},
	})
}

// executorTokenMounts are the mounts an argoexec container gets for the executor ServiceAccount's token:
// where the Kubernetes client finds in-cluster credentials, so argoexec acts as that account. Only
// containers that run argoexec (init, wait, a resource or data template's main) get it, never the user's.
func (b *builder) executorTokenMounts() []corev1.VolumeMount {
	if ExecutorServiceAccount(b.wf, b.tmpl) == "" {
		return nil
	}
	return []corev1.VolumeMount{{Name: common.ServiceAccountTokenVolumeName, MountPath: common.ServiceAccountTokenMountPath, ReadOnly: true}}
}
