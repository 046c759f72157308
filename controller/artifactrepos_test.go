package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestTheNamespacesArtifactRepositoriesComeFromTheCacheUnlessAskedFresh(t *testing.T) {
	cm := func(ns, name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": data}}
	}
	// The API server has a newer copy in ns and one in fresh-ns the cache has not seen yet.
	kube := fake.NewClientset(cm("ns", "artifact-repositories", "stored"), cm("fresh-ns", "artifact-repositories", "stored"), cm("ns", "my-repos", "stored"))
	defaults := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := defaults.Add(cm("ns", "artifact-repositories", "cached")); err != nil {
		t.Fatal(err)
	}
	s := configMapSource{kube: kube, defaults: defaults}
	for _, tc := range []struct {
		sentence        string
		namespace, name string
		fresh           bool
		want            string // the data read; "" for NotFound
		gets            int
	}{
		{"the default name is read from the cache", "ns", "artifact-repositories", false, "cached", 0},
		{"a default the cache lacks is NotFound without a read", "fresh-ns", "artifact-repositories", false, "", 0},
		{"a fresh read goes past the cache", "fresh-ns", "artifact-repositories", true, "stored", 1},
		{"any other name is read from the API server", "ns", "my-repos", false, "stored", 1},
	} {
		kube.ClearActions()
		got, err := s.ConfigMap(context.Background(), tc.namespace, tc.name, tc.fresh)
		switch {
		case tc.want == "" && !apierrors.IsNotFound(err):
			t.Errorf("%s: got %v, %v; want NotFound", tc.sentence, got, err)
		case tc.want != "" && (err != nil || got.Data["k"] != tc.want):
			t.Errorf("%s: got %v, %v; want data %q", tc.sentence, got, err, tc.want)
		}
		if n := len(kube.Actions()); n != tc.gets {
			t.Errorf("%s: %d API calls, want %d: %v", tc.sentence, n, tc.gets, kube.Actions())
		}
	}
}
