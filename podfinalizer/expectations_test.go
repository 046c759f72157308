package podfinalizer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestACachedPodIsPendingUntilTheCacheShowsOurRelease(t *testing.T) {
	pod := func(rv string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", ResourceVersion: rv, Finalizers: finalizers}}
	}
	var e Expectations
	if e.Pending(pod("5", Finalizer)) {
		t.Fatal("a pod never released is pending")
	}
	e.Expect("u1", "9")
	if !e.Pending(pod("5", Finalizer)) {
		t.Error("a cached copy older than our release is not pending: the next pass would patch it again")
	}
	if e.Pending(pod("9")) || e.Pending(pod("12", Finalizer)) {
		t.Error("a copy as new as our release, or newer (someone added the finalizer back), is still pending")
	}
	e.Observed(pod("7", Finalizer)) // an older update event: the release is not seen yet
	if !e.Pending(pod("7", Finalizer)) {
		t.Error("an update still showing the finalizer dropped the expectation")
	}
	e.Observed(pod("8")) // an older update without the finalizer (a pod only labelled completed has none)
	if !e.Pending(pod("8")) {
		t.Error("an update older than our patch dropped the expectation")
	}
	e.Observed(pod("9"))
	if e.Pending(pod("5", Finalizer)) {
		t.Error("the expectation outlived the update that showed the release")
	}
	e.Expect("u1", "9")
	e.Forget("u1") // the pod left the cache (labelled completed by our patch, or deleted)
	if !e.Pending(pod("5", Finalizer)) {
		t.Error("a pass's snapshot taken before the pod left the cache is not pending: it would patch it again")
	}
	if e.Pending(pod("9")) {
		t.Error("a copy as new as our patch is pending")
	}
	// Two generations of departures later, the expectation is gone: the set stays bounded.
	for i := range 2 * leftGeneration {
		uid := types.UID(fmt.Sprint("other-", i))
		e.Expect(uid, "1")
		e.Forget(uid)
	}
	if e.Pending(pod("5", Finalizer)) {
		t.Error("the expectation of a departed pod outlived two generations")
	}
	if n := len(e.released) + len(e.left) + len(e.leftBefore); n > 2*leftGeneration {
		t.Errorf("%d expectations kept, want at most %d", n, 2*leftGeneration)
	}
}
