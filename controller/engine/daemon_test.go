package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

const daemonSteps = `
metadata: {name: dm, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: server, template: serve}
    - - {name: client, template: call, arguments: {parameters: [{name: ip, value: "{{steps.server.ip}}"}]}}
  - name: serve
    daemon: true
    container: {image: nginx, command: [nginx]}
  - name: call
    inputs: {parameters: [{name: ip}]}
    container: {image: curl, command: [curl], args: ["{{inputs.parameters.ip}}"]}
`

// podIn is a copy of a created pod in phase, its containers ready or not, ended ones terminated.
func podIn(created *corev1.Pod, phase corev1.PodPhase, ready bool, reason string) *corev1.Pod {
	pod := created.DeepCopy()
	pod.Spec.NodeName = "node-1"
	pod.Status.Phase = phase
	pod.Status.Reason = reason
	pod.Status.PodIP = "10.0.1.7"
	for _, c := range pod.Spec.Containers {
		s := corev1.ContainerStatus{Name: c.Name, Ready: ready}
		switch phase {
		case corev1.PodRunning:
			s.State.Running = &corev1.ContainerStateRunning{}
		case corev1.PodSucceeded:
			s.State.Terminated = &corev1.ContainerStateTerminated{}
		case corev1.PodFailed:
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, s)
	}
	return pod
}

func completeResult(wf *wfv1.Workflow, id string) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: wf.Namespace,
		Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: "true", common.LabelKeyWorkflow: wf.Name},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: wf.UID}}}}
}

// podWorld runs passes of one workflow against pods and task results a test sets, as the controller does:
// merge results, assess pods, start, execute; each pass a second later.
type podWorld struct {
	t       *testing.T
	wf      *wfv1.Workflow
	e       *Engine
	pods    *recordingPods
	ext     *extstatus.Extensions
	now     time.Time
	seen    map[string]*corev1.Pod
	results []*wfv1.WorkflowTaskResult
}

func newPodWorld(t *testing.T, spec string) *podWorld {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(spec), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	return &podWorld{t: t, wf: wf, e: &Engine{Pods: pods}, pods: pods, ext: &extstatus.Extensions{},
		now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), seen: map[string]*corev1.Pod{}}
}

func (w *podWorld) pass() *Pass {
	w.now = w.now.Add(time.Second)
	p := &Pass{WF: w.wf, Ext: w.ext, Now: w.now, Pods: w.seen, TaskResultTimeout: time.Hour}
	taskresult.Merge(p.WF, w.results, p.Pods)
	p.Results = taskresult.Owned(p.WF, w.results, p.Pods)
	AssessNodes(p)
	if _, err := w.e.Start(p); err != nil {
		w.t.Fatal(err)
	}
	if err := w.e.Execute(context.Background(), p); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// worldStep is one change of the world (pods, results) and what the next pass must make of it.
type worldStep struct {
	sentence string
	world    func()
	check    func(p *Pass) string
}

func (w *podWorld) run(steps []worldStep) {
	for _, st := range steps {
		st.world()
		if msg := st.check(w.pass()); msg != "" {
			w.t.Fatalf("%s: %s", st.sentence, msg)
		}
	}
}

func TestADaemonServesItsSuccessorsAndIsStoppedWhenItsScopeEnds(t *testing.T) {
	w := newPodWorld(t, daemonSteps)
	wf, pods, seen := w.wf, w.pods, w.seen
	serverID, clientID := wf.NodeID("dm[0].server"), wf.NodeID("dm[1].client")
	w.run([]worldStep{
		{"the workflow starts and creates the daemon's pod", func() {}, func(p *Pass) string {
			if pods.created[serverID] == nil {
				return "no server pod: " + fmt.Sprint(p.node("dm[0].server"))
			}
			return ""
		}},
		{"a running daemon that is not ready holds its successors back", func() {
			seen[serverID] = podIn(pods.created[serverID], corev1.PodRunning, false, "")
		}, func(p *Pass) string {
			if s := p.node("dm[0].server"); daemoned(s) || pods.created[clientID] != nil {
				return "the server counted as done before it was ready"
			}
			return ""
		}},
		{"a ready daemon is daemoned with its pod IP, and its successor starts with {{steps.server.ip}}", func() {
			seen[serverID] = podIn(pods.created[serverID], corev1.PodRunning, true, "")
		}, func(p *Pass) string {
			s := p.node("dm[0].server")
			if !daemoned(s) || s.PodIP != "10.0.1.7" || s.Phase != wfv1.NodeRunning {
				return "server not daemoned Running with its IP: " + string(s.Phase)
			}
			c := pods.created[clientID]
			if c == nil || !strings.Contains(strings.Join(c.Spec.Containers[1].Args, " "), "10.0.1.7") {
				return "the client did not start with the server's IP"
			}
			return ""
		}},
		{"once the steps end, the daemon is stopped; the workflow waits for it", func() {
			seen[clientID] = podIn(pods.created[clientID], corev1.PodSucceeded, false, "")
			w.results = append(w.results, completeResult(wf, clientID))
		}, func(p *Pass) string {
			s := p.node("dm[0].server")
			if !stoppingDaemon(s) || s.Message != DaemonStoppedMessage || len(pods.stopped) != 1 || pods.stopped[0] != serverID {
				return "the server was not stopped: " + s.Message
			}
			if wf.Status.Phase != wfv1.WorkflowRunning || p.node("dm").Phase != wfv1.NodeSucceeded {
				return "want the steps Succeeded and the workflow Running, got " + string(wf.Status.Phase)
			}
			return ""
		}},
		{"the stopped pod ended without its result: the daemon waits for it, never Succeeded early (I1)", func() {
			seen[serverID] = podIn(pods.created[serverID], corev1.PodFailed, false, "DeadlineExceeded")
		}, func(p *Pass) string {
			s := p.node("dm[0].server")
			if s.Phase != wfv1.NodeRunning || !strings.HasPrefix(s.Message, WaitingForTaskResultPrefix) || wf.Status.Phase != wfv1.WorkflowRunning {
				return "want the server waiting for its result and the workflow Running, got " + string(s.Phase) + " " + s.Message
			}
			return ""
		}},
		{"its result arrives: the daemon ends Succeeded, as argo marks it, and the workflow Succeeds", func() {
			w.results = append(w.results, completeResult(wf, serverID))
		}, func(p *Pass) string {
			s := p.node("dm[0].server")
			if s.Phase != wfv1.NodeSucceeded || s.Daemoned != nil || wf.Status.Phase != wfv1.WorkflowSucceeded {
				return "want server Succeeded (not daemoned) and workflow Succeeded, got " + string(s.Phase) + " " + string(wf.Status.Phase)
			}
			if s.Outputs != nil && s.Outputs.ExitCode != nil {
				return "the stopped daemon took the kill's exit code " + *s.Outputs.ExitCode + "; argo records none"
			}
			return ""
		}},
	})
}

func TestADaemonsEndIsJudgedByArgosRules(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(daemonSteps), wf); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sentence  string
		daemoned  *bool
		pod       corev1.PodPhase
		reason    string
		synced    bool
		wantPhase wfv1.NodePhase
	}{
		{"a daemon whose pod exits by itself failed (argo's rule)", ptrTo(true), corev1.PodSucceeded, "", true, wfv1.NodeFailed},
		{"a daemon whose pod crashes failed", ptrTo(true), corev1.PodFailed, "", true, wfv1.NodeFailed},
		{"a stopped daemon whose result is in succeeded", ptrTo(false), corev1.PodFailed, "DeadlineExceeded", true, wfv1.NodeSucceeded},
		{"a stopped daemon that exited 0 with its result in succeeded", ptrTo(false), corev1.PodSucceeded, "", true, wfv1.NodeSucceeded},
		{"a stopped daemon without its result waits", ptrTo(false), corev1.PodFailed, "DeadlineExceeded", false, wfv1.NodeRunning},
	} {
		w := wf.DeepCopy()
		p := &Pass{WF: w, Now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
		n := p.newNode(nodeAt{"dm[0].server", "server", "serve", w.NodeID("dm")}, wfv1.NodeTypePod, wfv1.NodeRunning, "")
		n.Daemoned = tc.daemoned
		n.TaskResultSynced = &tc.synced
		p.setNode(n)
		created := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "wait"}, {Name: "main"}}}}
		p.Pods[n.ID] = podIn(created, tc.pod, false, tc.reason)
		AssessNodes(p)
		if got := p.node("dm[0].server"); got.Phase != tc.wantPhase {
			t.Errorf("%s: phase %s (%q), want %s", tc.sentence, got.Phase, got.Message, tc.wantPhase)
		}
	}
}

func TestABareDependencyOnADaemonedTaskIsMet(t *testing.T) {
	state := func(string) (wfv1.NodePhase, *wfv1.ContinueOn) { return phaseDaemoned, nil }
	for _, tc := range []struct {
		sentence, depends string
		want              bool
	}{
		{"a bare task accepts a daemoned task", "server", true},
		{"server.Daemoned holds", "server.Daemoned", true},
		{"server.Succeeded does not hold while it runs", "server.Succeeded", false},
	} {
		expr, err := parseDepends(tc.depends)
		if err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		if got := expr.eval(state); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.sentence, got, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
