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

// cacheConfigMaps reads and writes memoization cache ConfigMaps with GET/CREATE/UPDATE: a cache entry must
// be read fresh (another workflow may just have saved it) and written with the read's resourceVersion.
type cacheConfigMaps struct{ kube kubernetes.Interface }

func (s cacheConfigMaps) Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s cacheConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return s.kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: updateOptions.FieldManager})
}

func (s cacheConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return s.kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: updateOptions.FieldManager})
}
