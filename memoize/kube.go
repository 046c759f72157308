package memoize

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubeConfigMaps is ConfigMaps on the API server, with GET/CREATE/UPDATE: a cache entry must be read fresh
// (another workflow may just have saved it) and written with the read's resourceVersion.
type KubeConfigMaps struct {
	Kube         kubernetes.Interface
	FieldManager string
}

func (s KubeConfigMaps) Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s KubeConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return s.Kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: s.FieldManager})
}

func (s KubeConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return s.Kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: s.FieldManager})
}
