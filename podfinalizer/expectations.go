package podfinalizer

import (
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
	// left and leftBefore keep, for two generations of leftGeneration pods, the expectations of pods that
	// left the cache (labelled completed, or deleted): a pass whose snapshot of the cache predates the
	// departure still holds the old copy, and must not patch it again.
	left, leftBefore map[types.UID]string
}

// leftGeneration bounds each generation of departed pods' expectations.
const leftGeneration = 4096

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
// only because the cache (or the pass's snapshot of it) has not caught up.
func (e *Expectations) Pending(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range []map[types.UID]string{e.released, e.left, e.leftBefore} {
		if rv, ok := m[pod.UID]; ok {
			return resourceversion.Compare(pod.ResourceVersion, rv) < 0
		}
	}
	return false
}

// Observed drops the expectation once the cache shows our patch (its resourceVersion or a later one). A
// pod only labelled completed had no finalizer to show the difference, so the version decides.
func (e *Expectations) Observed(pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rv, ok := e.released[pod.UID]; ok && resourceversion.Compare(pod.ResourceVersion, rv) >= 0 {
		delete(e.released, pod.UID)
	}
}

// Forget moves the expectation of a pod that left the cache to the departed generations, which are
// dropped two generations later, so the set stays bounded. It reports whether there was one: the pod left
// because of our own patch.
func (e *Expectations) Forget(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	rv, ok := e.released[uid]
	if !ok {
		return false
	}
	delete(e.released, uid)
	if len(e.left) >= leftGeneration || e.left == nil {
		e.leftBefore, e.left = e.left, map[types.UID]string{}
	}
	e.left[uid] = rv
	return true
}
