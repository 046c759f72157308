package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// serviceAccountSource reads the executor ServiceAccounts workflows name (executor.serviceAccountName) with
// a GET, as argo does for each pod: no informer, so the controller neither lists nor caches every
// ServiceAccount of the cluster, and the engine reads each account once a pass.
type serviceAccountSource struct{ kube kubernetes.Interface }

func (s serviceAccountSource) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return s.kube.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}
