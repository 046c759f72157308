package podspec

import (
	"slices"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// EnvExecutorServiceAccount names, in each container that runs argoexec, the executor ServiceAccount whose
// token the pod mounts (argoexec ignores it). It is the controller's record of that account on the pod
// itself: a pod's spec cannot change after creation, so the task-result merge (ExecutorServiceAccountOf)
// reads which account's results may decide the node from a fact nobody can edit later, unlike an
// annotation (any pod patcher) or the workflow's spec (its editors).
const EnvExecutorServiceAccount = "WFGUARD_EXECUTOR_SERVICE_ACCOUNT"

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

// ExecutorServiceAccountOf is the executor ServiceAccount pod was created to run argoexec as: the value of
// EnvExecutorServiceAccount, when the pod has the exec-sa-token volume and every container that sets the
// variable agrees on it; "" otherwise (no executor account, or a pod whose own spec contradicts itself,
// which only its submitter could write: its results then decide nothing as an account's).
func ExecutorServiceAccountOf(pod *corev1.Pod) string {
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == common.ServiceAccountTokenVolumeName }) {
		return ""
	}
	account := ""
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, env := range c.Env {
			switch {
			case env.Name != EnvExecutorServiceAccount:
			case env.ValueFrom != nil || env.Value == "" || (account != "" && env.Value != account):
				return ""
			default:
				account = env.Value
			}
		}
	}
	return account
}
