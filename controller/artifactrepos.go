package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// configMapSource reads artifact repository ConfigMaps for the engine with a GET. No informer: the engine
// reads one once per workflow, when it starts, and stores the repository in its status.
type configMapSource struct{ kube kubernetes.Interface }

func (s configMapSource) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}
