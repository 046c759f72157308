package podfinalizer

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// departed holds the pods that left the pod cache while still holding the status finalizer, other than by
// our own settling patch. A pod holding the finalizer cannot be gone, so someone else changed a label the
// cache selects on (labelled it completed, or removed its workflow label): without this store its
// finalizer would never be released and the pod could never be deleted. It shares the pod cache's indexes.
// The copies are the last the cache had (a watch reports a pod leaving its selector with its previous
// content), so a pass reads a departed pod of a node that is not final past the cache.
type departed struct {
	store cache.Indexer
}

func newDeparted(pods cache.Indexer) departed {
	return departed{store: cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, pods.GetIndexers())}
}

// left keeps a pod the cache dropped if it still holds the finalizer.
func (d departed) left(pod *corev1.Pod) {
	if slices.Contains(pod.Finalizers, Finalizer) {
		_ = d.store.Update(pod)
	}
}

// drop forgets a pod: it is back in the cache, settled, or gone.
func (d departed) drop(pod *corev1.Pod) {
	if d.has(pod) {
		_ = d.store.Delete(pod)
	}
}

// has reports whether pod (by name and UID) is kept aside.
func (d departed) has(pod *corev1.Pod) bool { return d.get(pod) != nil }

// get is the kept copy of pod (by name and UID), or nil.
func (d departed) get(pod *corev1.Pod) *corev1.Pod {
	if old, ok, _ := d.store.Get(pod); ok && old.(*corev1.Pod).UID == pod.UID {
		return old.(*corev1.Pod)
	}
	return nil
}

// byIndex is the departed pods under index=value.
func (d departed) byIndex(index, value string) []any {
	objs, _ := d.store.ByIndex(index, value)
	return objs
}
