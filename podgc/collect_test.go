package podgc

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMergingCachedPodsWithTheCompletedPodsRead(t *testing.T) {
	copyOf := func(uid, rv string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID(uid), ResourceVersion: rv, Finalizers: finalizers}}
	}
	for _, tc := range []struct {
		sentence       string
		cached, read   *corev1.Pod
		wantVersion    string
		wantFinalizers int
	}{
		{"a cached copy that predates our release loses to the read one", copyOf("u", "10", "f"), copyOf("u", "12"), "12", 0},
		{"a copy settled in this pass, newer than the read one, wins", copyOf("u", "14"), copyOf("u", "12"), "14", 0},
		{"a read copy of another pod of the same node ID does not replace the cached pod", copyOf("u", "10", "f"), copyOf("other", "12"), "10", 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got := merged(map[string]*corev1.Pod{"n": tc.cached}, map[string]*corev1.Pod{"n": tc.read})["n"]
			if got.ResourceVersion != tc.wantVersion || len(got.Finalizers) != tc.wantFinalizers {
				t.Errorf("merged copy = version %s finalizers %v, want version %s with %d finalizers", got.ResourceVersion, got.Finalizers, tc.wantVersion, tc.wantFinalizers)
			}
		})
	}
	if got := merged(nil, map[string]*corev1.Pod{"n": copyOf("u", "3")}); got["n"] == nil {
		t.Error("a completed pod the cache lacks is missing from the merge")
	}
}
