package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
)

// takenPods refuses every create while its pod name is taken by an earlier workflow's pod.
type takenPods struct {
	recordingPods
	takenUntil time.Time // the old pod goes at this time
	now        *time.Time
	tries      int
}

func (t *takenPods) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	t.tries++
	if t.now.Before(t.takenUntil) {
		return &PodNameTakenError{Namespace: pod.Namespace, Name: pod.Name, OwnerUID: "old-uid"}
	}
	return t.recordingPods.CreatePod(ctx, pod)
}

func TestANodeWaitsForAnEarlierWorkflowsPodToFreeItsNameBounded(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sentence   string
		goneAfter  time.Duration
		wait       time.Duration
		until      time.Duration // how long the test runs passes, one a second
		wantPhase  wfv1.NodePhase
		wantPrefix string
	}{
		{"a pod that goes within the wait lets the node create its own pod and run",
			15 * time.Second, time.Minute, 20 * time.Second, wfv1.NodePending, ""},
		{"while the old pod is there the node stays Pending saying why, past the missing-pod grace",
			time.Hour, time.Minute, 15 * time.Second, wfv1.NodePending, WaitingForOldPodPrefix + ": pod ns/"},
		{"an old pod that never goes errors the node naming it once the wait is over",
			time.Hour, 30 * time.Second, 40 * time.Second, wfv1.NodeError, "pod ns/"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(chain), wf); err != nil {
				t.Fatal(err)
			}
			now := start
			pods := &takenPods{recordingPods: recordingPods{created: map[string]*corev1.Pod{}}, takenUntil: start.Add(tc.goneAfter), now: &now}
			e := &Engine{Pods: pods, OldPodWait: tc.wait}
			var events []Event
			var lastRequeue time.Duration
			for ; !now.After(start.Add(tc.until)); now = now.Add(time.Second) {
				p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
				for id, pod := range pods.created {
					p.Pods[id] = pod
				}
				AssessNodes(p)
				if _, err := e.Start(p); err != nil {
					t.Fatal(err)
				}
				if err := e.Execute(context.Background(), p); err != nil {
					t.Fatalf("a taken pod name failed the pass: %v", err)
				}
				events = append(events, p.Events...)
				lastRequeue = p.RequeueAfter()
			}
			a := p0(wf, "chain[0].a")
			if a == nil || a.Phase != tc.wantPhase || !strings.HasPrefix(a.Message, tc.wantPrefix) {
				t.Fatalf("a = %+v, want %s with a message starting %q", a, tc.wantPhase, tc.wantPrefix)
			}
			if !a.StartedAt.Time.Equal(start) {
				t.Errorf("a started at %s, want the first try %s", a.StartedAt, start)
			}
			waits := 0
			for _, ev := range events {
				if ev.Reason == ReasonNodeWaitingForOldPod {
					waits++
					if ev.Warning || !strings.Contains(ev.Message, "old-uid") {
						t.Errorf("wait event = %+v, want a Normal event naming the old UID", ev)
					}
				}
			}
			if waits != 1 {
				t.Errorf("%d %s events, want one when the wait began", waits, ReasonNodeWaitingForOldPod)
			}
			_, created := pods.created[a.ID]
			switch {
			case tc.wantPrefix == "":
				if !created || a.Message != "" {
					t.Errorf("a's pod created = %v, message %q; want created once the name was free", created, a.Message)
				}
			case tc.wantPhase == wfv1.NodePending:
				if created || lastRequeue <= 0 || lastRequeue > OldPodPollInterval {
					t.Errorf("created = %v, requeue in %s; want no pod and a retry within %s", created, lastRequeue, OldPodPollInterval)
				}
				if !strings.Contains(a.Message, "old-uid") || !strings.Contains(a.Message, "(since "+start.Format(time.RFC3339)+")") {
					t.Errorf("message %q should name the old UID and when the wait began", a.Message)
				}
			default:
				if created || !strings.Contains(a.Message, "was still there after 30s") || !strings.Contains(a.Message, common.FinalizerPodStatus) {
					t.Errorf("created = %v, message %q; want no pod and the timeout named", created, a.Message)
				}
				if wf.Status.Phase != wfv1.WorkflowFailed && wf.Status.Phase != wfv1.WorkflowError {
					t.Errorf("workflow %s, want it ended", wf.Status.Phase)
				}
			}
		})
	}
}
