package podfinalizer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	e.Observed(pod("9"))
	if e.Pending(pod("5", Finalizer)) {
		t.Error("the expectation outlived the update that showed the release")
	}
	e.Expect("u1", "9")
	e.Forget("u1")
	if e.Pending(pod("5", Finalizer)) {
		t.Error("the expectation of a deleted pod was kept")
	}
}
