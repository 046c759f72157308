package taskresult

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/extstatus"
)

func TestJudgeBoundsAWaitOnEvidence(t *testing.T) {
	const timeout = 10 * time.Second
	since := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	unsynced := false
	waiting := wfv1.NodeStatus{ID: "n", Type: wfv1.NodeTypePod, Phase: wfv1.NodeRunning, TaskResultSynced: &unsynced}
	failed := wfv1.NodeStatus{ID: "n", Type: wfv1.NodeTypePod, Phase: wfv1.NodeFailed, TaskResultSynced: &unsynced, FinishedAt: metav1.NewTime(since)}
	ext := &extstatus.Extensions{ResultWaits: map[string]metav1.Time{"n": metav1.NewTime(since)}}
	for _, tc := range []struct {
		sentence    string
		node        wfv1.NodeStatus
		ext         *extstatus.Extensions
		verified    bool
		after       time.Duration
		wantExpired bool
		wantRecheck time.Duration // after since; 0 = none
		wantMsg     string
	}{
		{"a node with no recorded wait is not judged", waiting, &extstatus.Extensions{}, true, time.Hour, false, 0, ""},
		{"a fresh wait is looked at again when the cache's grace ends", waiting, ext, true, 0, false, DirectReadGrace, ""},
		{"a wait past the grace is looked at again at its deadline", waiting, ext, true, 2 * time.Second, false, timeout, ""},
		{"a verified wait expires at its deadline, saying what was missing", waiting, ext, true, timeout, true, 0, "TaskResultTimeout"},
		{"an unverified wait goes on past its deadline, rechecked within a second", waiting, ext, false, timeout, false, timeout + time.Second, ""},
		{"an unverified wait ends at twice the timeout, saying it could not be read", waiting, ext, false, 2 * timeout, true, 0, "could not be read past the cache"},
		{"a failed pod's node waits from its finish and expires without a message", failed, &extstatus.Extensions{}, false, timeout, true, 0, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			v := Judge(tc.ext, &tc.node, Evidence{Verified: tc.verified}, timeout, since.Add(tc.after))
			if v.Expired != tc.wantExpired || !strings.Contains(v.Message, tc.wantMsg) || (tc.wantMsg == "" && v.Message != "") {
				t.Fatalf("verdict %+v, want expired=%v message containing %q", v, tc.wantExpired, tc.wantMsg)
			}
			var want time.Time
			if tc.wantRecheck > 0 {
				want = since.Add(tc.wantRecheck)
			}
			if !v.RecheckAt.Equal(want) {
				t.Fatalf("recheck at %s, want %s", v.RecheckAt, want)
			}
		})
	}
}

func TestAnExecutorThatCanReportNothingMoreOpensTheGate(t *testing.T) {
	exited := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	for _, tc := range []struct {
		sentence string
		status   corev1.PodStatus
		want     bool
	}{
		{"a pod whose wait container failed can report nothing more", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{exited("wait", 137)}}, true},
		{"a pod whose wait container exited 0 has reported", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{exited("wait", 0)}}, false},
		{"an evicted pod without container statuses can report nothing more", corev1.PodStatus{Reason: "Evicted"}, true},
		{"an evicted pod whose wait container ran may have reported", corev1.PodStatus{Reason: "Evicted", ContainerStatuses: []corev1.ContainerStatus{exited("wait", 0)}}, false},
	} {
		if got := CannotReport(&corev1.Pod{Status: tc.status}); got != tc.want {
			t.Errorf("%s: got %v", tc.sentence, got)
		}
	}
}

// The wait's start is persisted in status, which whoever can write the Workflow can also write: a start later
// than the pod's finish would postpone the bound, so the pod's finish wins over it.
func TestRecordWaitCountsFromTheEarlierOfTheRecordAndThePodsFinish(t *testing.T) {
	finish := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sentence string
		recorded *time.Time
		since    time.Time
		want     time.Time
	}{
		{"a first wait starts at the pod's finish", nil, finish, finish},
		{"an earlier record wins over the pod's finish", timePtr(finish.Add(-time.Minute)), finish, finish.Add(-time.Minute)},
		{"a record later than the pod's finish is replaced by the finish", timePtr(finish.Add(24 * time.Hour)), finish, finish},
		{"a record is kept when the pod's finish is unknown", timePtr(finish.Add(time.Hour)), time.Time{}, finish.Add(time.Hour)},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ext := &extstatus.Extensions{}
			if tc.recorded != nil {
				ext.ResultWaits = map[string]metav1.Time{"n": metav1.NewTime(*tc.recorded)}
			}
			got := RecordWait(ext, "n", tc.since)
			if !got.Equal(tc.want) || !ext.ResultWaits["n"].Time.Equal(tc.want) {
				t.Fatalf("wait starts %s (recorded %s), want %s", got, ext.ResultWaits["n"].Time, tc.want)
			}
		})
	}
}

func timePtr(t time.Time) *time.Time { return &t }

func TestForgetWaitsDropsOnlyTheNamedNodesWaits(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		sentence string
		waits    map[string]metav1.Time
		forget   map[string]bool
		want     []string
	}{
		{"the waits of removed nodes go, the others stay", map[string]metav1.Time{"a": since, "b": since, "c": since}, map[string]bool{"a": true, "c": true}, []string{"b"}},
		{"a removed node that did not wait changes nothing", map[string]metav1.Time{"a": since}, map[string]bool{"z": true}, []string{"a"}},
		{"no recorded waits stay none", nil, map[string]bool{"a": true}, nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ext := &extstatus.Extensions{ResultWaits: tc.waits}
			ForgetWaits(ext, tc.forget)
			got := slices.Sorted(maps.Keys(ext.ResultWaits))
			if !slices.Equal(got, tc.want) {
				t.Errorf("waits of %v, want %v", got, tc.want)
			}
		})
	}
}
