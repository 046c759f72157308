package engine

import (
	"context"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

func TestATimeoutBoundsTheNewPodByWhatIsLeftOfIt(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	node := &wfv1.NodeStatus{Name: "wf.a", StartedAt: metav1.NewTime(start)}
	for _, tc := range []struct {
		sentence string
		timeout  time.Duration
		existing *int64
		now      time.Time
		want     *int64
		err      string
	}{
		{"no timeout leaves the pod alone", 0, ptr.To[int64](50), start, ptr.To[int64](50), ""},
		{"a timeout sets activeDeadlineSeconds", time.Minute, nil, start, ptr.To[int64](60), ""},
		{"a shorter workflow deadline is kept", time.Minute, ptr.To[int64](20), start, ptr.To[int64](20), ""},
		{"a longer workflow deadline is lowered", time.Minute, ptr.To[int64](600), start, ptr.To[int64](60), ""},
		{"the time already spent counts", time.Minute, nil, start.Add(45 * time.Second), ptr.To[int64](15), ""},
		{"one second left is argo's error", time.Minute, nil, start.Add(59 * time.Second), nil, "wf.a exceeded its deadline"},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.existing}}
		err := applyTimeout(pod, node, tc.timeout, tc.now)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.sentence, err, tc.err)
			continue
		}
		if tc.err == "" && !equalInt64(pod.Spec.ActiveDeadlineSeconds, tc.want) {
			t.Errorf("%s: activeDeadlineSeconds = %v, want %v", tc.sentence, deref(pod.Spec.ActiveDeadlineSeconds), deref(tc.want))
		}
	}
}

func TestATimeoutIsAGoDurationOnALeafTemplate(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		timeout  string
		want     time.Duration
		err      string
	}{
		{"no timeout", "", 0, ""},
		{"a Go duration", "90s", 90 * time.Second, ""},
		{"not a duration is argo's error", "soon", 0, `invalid timeout format. time: invalid duration "soon"`},
	} {
		got, err := templateTimeout(&wfv1.Template{Timeout: tc.timeout})
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: %s, %v; want %s, %q", tc.sentence, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		sentence, template, err string
	}{
		{"a timeout on a container template is accepted", `{name: c, timeout: 1m, container: {image: a}}`, ""},
		{"a timeout on a steps template is argo's error", `{name: s, timeout: 1m, steps: []}`, "Steps template doesn't support timeout field."},
		{"a timeout on a suspend template is argo's error", `{name: s, timeout: 1m, suspend: {}}`, "Suspend template doesn't support timeout field."},
		{"activeDeadlineSeconds on a DAG is argo's error", `{name: d, activeDeadlineSeconds: 5, dag: {tasks: []}}`,
			"templates.d.activeDeadlineSeconds is only valid for leaf templates"},
		{"activeDeadlineSeconds on a suspend template is ignored, as argo does", `{name: s, activeDeadlineSeconds: 5, suspend: {}}`, ""},
	} {
		var tmpl wfv1.Template
		if err := yaml.UnmarshalStrict([]byte(tc.template), &tmpl); err != nil {
			t.Fatal(err)
		}
		err := checkLeafOnly(&wfv1.Workflow{Spec: wfv1.WorkflowSpec{Templates: []wfv1.Template{tmpl}}})
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.sentence, err, tc.err)
		}
	}
}

// stoppingPods records the pods the engine stopped and deleted.
type stoppingPods struct{ stopped, deleted []string }

func (s *stoppingPods) CreatePod(context.Context, *corev1.Pod) error { return nil }
func (s *stoppingPods) StopPod(_ context.Context, pod *corev1.Pod) error {
	s.stopped = append(s.stopped, pod.Name)
	return nil
}
func (s *stoppingPods) DeletePod(_ context.Context, pod *corev1.Pod) error {
	s.deleted = append(s.deleted, pod.Name)
	return nil
}

func TestAPendingNodePastItsTimeoutFailsWithItsGateIntact(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tmpl := &wfv1.Template{Name: "c", Timeout: "1m", Container: &corev1.Container{Image: "a"}}
	for _, tc := range []struct {
		sentence      string
		phase         wfv1.NodePhase
		nodeName      string // the pod's spec.nodeName
		now           time.Time
		wantPhase     wfv1.NodePhase
		wantSynced    bool
		stop, delete  bool
		wantRequeueAt time.Time
	}{
		{"before the timeout nothing happens and a pass is due at it", wfv1.NodePending, "", start.Add(30 * time.Second),
			wfv1.NodePending, false, false, false, start.Add(time.Minute)},
		{"an unscheduled pod is deleted and the node fails, synced (it can never report)", wfv1.NodePending, "", start.Add(time.Minute),
			wfv1.NodeFailed, true, false, true, time.Time{}},
		{"a scheduled pod is stopped and the node fails, waiting for the pod's report", wfv1.NodePending, "node-1", start.Add(time.Minute),
			wfv1.NodeFailed, false, true, false, time.Time{}},
		{"a running node is left to the kubelet's activeDeadlineSeconds", wfv1.NodeRunning, "node-1", start.Add(time.Hour),
			wfv1.NodeRunning, false, false, false, time.Time{}},
	} {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns"}, Spec: wfv1.WorkflowSpec{Templates: []wfv1.Template{*tmpl}}}
		pods := &stoppingPods{}
		p := &Pass{WF: wf, Now: tc.now, Pods: map[string]*corev1.Pod{}}
		synced := false
		n := p.newNode(nodeAt{"wf.a", "a", "c", ""}, wfv1.NodeTypePod, tc.phase, "")
		n.StartedAt = metav1.NewTime(start)
		n.TaskResultSynced = &synced
		p.setNode(n)
		p.Pods[n.ID] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-c-1"}, Spec: corev1.PodSpec{NodeName: tc.nodeName, ActiveDeadlineSeconds: ptr.To[int64](60)}}
		if err := (&Engine{Pods: pods}).enforceTimeout(context.Background(), p, n, tmpl, wfv1.Arguments{}, execOpts{}); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		got := p.node("wf.a")
		if got.Phase != tc.wantPhase || *got.TaskResultSynced != tc.wantSynced {
			t.Errorf("%s: node %s synced=%v, want %s synced=%v", tc.sentence, got.Phase, *got.TaskResultSynced, tc.wantPhase, tc.wantSynced)
		}
		if got.Phase == wfv1.NodeFailed && got.Message != "timeout" {
			t.Errorf("%s: message %q, want argo's %q", tc.sentence, got.Message, "timeout")
		}
		if (len(pods.stopped) > 0) != tc.stop || (len(pods.deleted) > 0) != tc.delete {
			t.Errorf("%s: stopped %v deleted %v, want stop=%v delete=%v", tc.sentence, pods.stopped, pods.deleted, tc.stop, tc.delete)
		}
		if !p.requeueAt.Equal(tc.wantRequeueAt) {
			t.Errorf("%s: requeue at %s, want %s", tc.sentence, p.requeueAt, tc.wantRequeueAt)
		}
	}
}

func equalInt64(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func deref(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}
