package engine

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// refuseRecordKey refuses a pod that would read the controller's record key Secret: where workflows run in
// the controller's own namespace (a namespaced install), whoever may submit a workflow could mount it, read
// the key, and forge every seal made with it (action records, CronWorkflow runs, memoization entries, the
// start seal). The kubelet mounts a Secret of the pod's namespace without asking who submitted the pod.
func refuseRecordKey(pod *corev1.Pod, key types.NamespacedName) error {
	if key.Name == "" || pod.Namespace != key.Namespace || !readsSecret(pod, key.Name) {
		return nil
	}
	return fmt.Errorf("%s: pod %s would read Secret %s, the controller's record key (--record-key-secret); run workflows in another namespace than the controller's, or name another Secret",
		RecordKeyRefusedPrefix, pod.Name, key.Name)
}

// RecordKeyRefusedPrefix starts the message of a node whose pod would read the controller's record key.
const RecordKeyRefusedPrefix = "refusing to create a pod that reads the controller's record key"

// readsSecret reports whether any volume or container of pod refers to the Secret name.
func readsSecret(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool {
			return s.Secret != nil && s.Secret.Name == name
		}) {
			return true
		}
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, env := range c.Env {
			if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil && env.ValueFrom.SecretKeyRef.Name == name {
				return true
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil && from.SecretRef.Name == name {
				return true
			}
		}
	}
	return false
}
