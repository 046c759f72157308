package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller/engine"
)

// configMapSource reads artifact repository ConfigMaps for the engine. Every workflow's start reads its
// namespace's artifact-repositories ConfigMap: that name comes from a cache of its own (a GET per start
// was a round trip on the path of every workflow's first pod). Other names, and fresh reads, are GETs.
type configMapSource struct {
	kube kubernetes.Interface
	// defaults caches the ConfigMaps named engine.DefaultArtifactRepositoriesConfigMap; nil reads them too.
	defaults cache.Indexer
}

func (s configMapSource) ConfigMap(ctx context.Context, namespace, name string, fresh bool) (*corev1.ConfigMap, error) {
	if !fresh && s.defaults != nil && name == engine.DefaultArtifactRepositoriesConfigMap {
		obj, ok, err := s.defaults.GetByKey(namespace + "/" + name)
		if err == nil {
			if !ok {
				return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
			}
			return obj.(*corev1.ConfigMap), nil // read-only: the engine decodes its data
		}
	}
	return s.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}
