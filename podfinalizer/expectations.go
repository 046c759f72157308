package podfinalizer

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/internal/resourceversion"
)

// Expectations remember the pods whose finalizer this process removed, with the resourceVersion each removal
// produced, until the pod cache shows the removal (as the Kubernetes Job controller's ControllerExpectations
// remember its own creations and deletions): a lagging pod cache then costs no conflicting PATCH and GET per
// pass. The zero value is ready to use; it is safe for concurrent use.
type Expectations struct {
	mu       sync.Mutex
	released map[types.UID]string
}

// Expect records that the finalizer of the pod with uid was removed, producing resourceVersion rv.
func (e *Expectations) Expect(uid types.UID, rv string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released == nil {
		e.released = map[types.UID]string{}
	}
	e.released[uid] = rv
}

// Pending reports whether the cached pod predates our release of its finalizer: it still shows the finalizer
// only because the cache has not caught up.
func (e *Expectations) Pending(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	rv, ok := e.released[pod.UID]
	return ok && resourceversion.Compare(pod.ResourceVersion, rv) < 0
}

// Observed drops the expectation once the cache shows the pod without our finalizer.
func (e *Expectations) Observed(pod *corev1.Pod) {
	if slices.Contains(pod.Finalizers, Finalizer) {
		return
	}
	e.Forget(pod.UID)
}

// Forget drops the expectation of a pod that is gone, so the set stays bounded.
func (e *Expectations) Forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.released, uid)
}
