package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// csGraph is argo's graph example with commands: a first, then b and c, then d.
const csGraph = `
metadata: {name: cs, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}
spec:
  entrypoint: main
  templates:
  - name: main
    containerSet:
      containers:
      - {name: a, image: argosay, command: [/argosay]}
      - {name: b, image: argosay, command: [/argosay], dependencies: [a]}
      - {name: c, image: argosay, command: [/argosay], dependencies: [a]}
      - {name: d, image: argosay, command: [/argosay], dependencies: [b, c]}
`

// csWorld runs a containerSet workflow's passes against pods and task results the test sets.
type csWorld struct {
	t       *testing.T
	wf      *wfv1.Workflow
	e       *Engine
	pods    *recordingPods
	seen    map[string]*corev1.Pod
	results []*wfv1.WorkflowTaskResult
	ext     *extstatus.Extensions
	now     time.Time
}

func newCSWorld(t *testing.T, spec string) *csWorld {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(spec), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	return &csWorld{t: t, wf: wf, e: &Engine{Pods: pods}, pods: pods, seen: map[string]*corev1.Pod{},
		ext: &extstatus.Extensions{}, now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
}

func (w *csWorld) pass() {
	w.t.Helper()
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
}

// podEnds shows node's pod in phase with each named container in its state ("exit N", "running",
// "waiting"); wait exits 0 and the result is complete once the pod ended.
func (w *csWorld) podEnds(node string, phase corev1.PodPhase, states map[string]string) {
	w.t.Helper()
	id := w.wf.NodeID(node)
	created := w.pods.created[id]
	if created == nil {
		w.t.Fatalf("no pod for %s", node)
	}
	pod := created.DeepCopy()
	pod.Spec.NodeName, pod.Status.Phase = "node-1", phase
	for _, c := range pod.Spec.Containers {
		state := states[c.Name]
		if c.Name == "wait" {
			state = "exit 0"
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, containerStatus(c.Name, state))
	}
	w.seen[id] = pod
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		w.results = append(w.results, completeResult(w.wf, id))
	}
}

func containerStatus(name, state string) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: name}
	var code int32
	switch {
	case state == "running":
		s.State.Running = &corev1.ContainerStateRunning{}
	case state == "waiting":
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
	default:
		_, _ = fmt.Sscanf(state, "exit %d", &code)
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}
	}
	return s
}

// tree lists every node as "name: type phase[ message]", by name.
func (w *csWorld) tree() string {
	var names []string
	for _, n := range w.wf.Status.Nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	var lines []string
	for _, name := range names {
		n := p0(w.wf, name)
		line := fmt.Sprintf("%s: %s %s", n.Name, n.Type, n.Phase)
		if n.Message != "" {
			line += " " + n.Message
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// children lists the named node's children by name.
func (w *csWorld) children(name string) []string {
	var out []string
	for _, id := range p0(w.wf, name).Children {
		out = append(out, w.wf.Status.Nodes[id].Name)
	}
	slices.Sort(out)
	return out
}

func TestAContainerSetsContainersAreContainerNodesMovedByTheirStatuses(t *testing.T) {
	tests := []struct {
		name     string
		pod      corev1.PodPhase
		states   map[string]string
		workflow wfv1.WorkflowPhase
		tree     string
	}{
		{
			name: "containers that all exit 0 succeed with their Pod node and the workflow",
			pod:  corev1.PodSucceeded, states: map[string]string{"a": "exit 0", "b": "exit 0", "c": "exit 0", "d": "exit 0"},
			workflow: wfv1.WorkflowSucceeded,
			tree:     "cs: Pod Succeeded\ncs.a: Container Succeeded\ncs.b: Container Succeeded\ncs.c: Container Succeeded\ncs.d: Container Succeeded",
		},
		{
			name: "a container exiting 1 fails naming its exit, one still running in the failed pod fails too, one never started stays Pending",
			pod:  corev1.PodFailed, states: map[string]string{"a": "exit 0", "b": "exit 1", "c": "running", "d": "waiting"},
			workflow: wfv1.WorkflowFailed,
			tree: "cs: Pod Failed b: Error (exit code 1)\ncs.a: Container Succeeded\ncs.b: Container Failed b: Error (exit code 1): \n" +
				"cs.c: Container Failed Pod Failed whilst container running\ncs.d: Container Failed Pod Failed whilst container running",
		},
		{
			name: "a container whose emissary failed (exit 64) errors rather than fails",
			pod:  corev1.PodFailed, states: map[string]string{"a": "exit 64", "b": "waiting", "c": "waiting", "d": "waiting"},
			workflow: wfv1.WorkflowFailed,
			tree: "cs: Pod Failed a: Error (exit code 64)\ncs.a: Container Error a: Error (exit code 64): \n" +
				"cs.b: Container Failed Pod Failed whilst container running\ncs.c: Container Failed Pod Failed whilst container running\n" +
				"cs.d: Container Failed Pod Failed whilst container running",
		},
		{
			name: "a running pod moves its containers one by one and the workflow keeps running",
			pod:  corev1.PodRunning, states: map[string]string{"a": "exit 0", "b": "running", "c": "exit 2", "d": "waiting"},
			workflow: wfv1.WorkflowRunning,
			tree: "cs: Pod Running\ncs.a: Container Succeeded\ncs.b: Container Running\ncs.c: Container Failed c: Error (exit code 2): \n" +
				"cs.d: Container Pending",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newCSWorld(t, csGraph)
			w.pass()
			w.podEnds("cs", tt.pod, tt.states)
			w.pass()
			if got := w.tree(); got != tt.tree {
				t.Errorf("nodes:\n%s\nwant:\n%s", got, tt.tree)
			}
			if w.wf.Status.Phase != tt.workflow {
				t.Errorf("workflow %s (%s), want %s", w.wf.Status.Phase, w.wf.Status.Message, tt.workflow)
			}
		})
	}
}

func TestAContainerSetIsOnePodWithItsContainersLinkedAsItsGraph(t *testing.T) {
	w := newCSWorld(t, csGraph)
	w.pass()
	if len(w.pods.created) != 1 {
		t.Fatalf("%d pods created, want one for the whole set", len(w.pods.created))
	}
	want := "cs: Pod Pending\ncs.a: Container Pending\ncs.b: Container Pending\ncs.c: Container Pending\ncs.d: Container Pending"
	if got := w.tree(); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
	for parent, want := range map[string][]string{"cs": {"cs.a"}, "cs.a": {"cs.b", "cs.c"}, "cs.b": {"cs.d"}, "cs.c": {"cs.d"}, "cs.d": nil} {
		if got := w.children(parent); !slices.Equal(got, want) {
			t.Errorf("children of %s = %v, want %v", parent, got, want)
		}
	}
	a := p0(w.wf, "cs.a")
	if a.DisplayName != "a" || a.BoundaryID != w.wf.NodeID("cs") || a.TemplateName != "main" || a.TaskResultSynced != nil {
		t.Errorf("container node = %+v, want display name a, bounded by the Pod node, template main, no task result gate", a)
	}
	if synced := p0(w.wf, "cs").TaskResultSynced; synced == nil || *synced {
		t.Errorf("the Pod node's task result gate is %v, want closed until its result is in", synced)
	}
}

func TestAContainerSetsPodNodeWaitsForItsTaskResult(t *testing.T) {
	w := newCSWorld(t, csGraph)
	w.pass()
	w.podEnds("cs", corev1.PodSucceeded, map[string]string{"a": "exit 0", "b": "exit 0", "c": "exit 0", "d": "exit 0"})
	w.results = nil // the pod ended, its executor has not reported yet
	w.pass()
	if n := p0(w.wf, "cs"); n.Phase != wfv1.NodeRunning || !strings.HasPrefix(n.Message, WaitingForTaskResultPrefix) {
		t.Errorf("Pod node %s %q, want Running waiting for its task result", n.Phase, n.Message)
	}
	if n := p0(w.wf, "cs.d"); n.Phase != wfv1.NodeSucceeded {
		t.Errorf("container d %s, want Succeeded from its own status", n.Phase)
	}
	if w.wf.Status.Phase != wfv1.WorkflowRunning {
		t.Errorf("workflow %s, want Running until the result is in", w.wf.Status.Phase)
	}
}

func TestAContainerSetWithoutACommandErrorsWithArgosEntrypointMessage(t *testing.T) {
	w := newCSWorld(t, strings.Replace(csGraph, "{name: b, image: argosay, command: [/argosay],", "{name: b, image: argosay,", 1))
	w.pass()
	want := `cs: Pod Error failed to look-up entrypoint/cmd for image "argosay", you must either explicitly specify the command, ` +
		`or list the image's command in the index: https://argo-workflows.readthedocs.io/en/latest/workflow-executors/#emissary-emissary: ` +
		`wfguard does not look up image entrypoints (template main, container b)`
	if got := w.tree(); got != want {
		t.Errorf("nodes:\n%s\nwant (no Container nodes, as argo creates them only with the pod):\n%s", got, want)
	}
	if w.wf.Status.Phase != wfv1.WorkflowError || len(w.pods.created) != 0 {
		t.Errorf("workflow %s with %d pods, want Error and none", w.wf.Status.Phase, len(w.pods.created))
	}
}

func TestADeletedContainerSetPodErrorsItsUnfinishedContainers(t *testing.T) {
	w := newCSWorld(t, csGraph)
	w.pass()
	w.podEnds("cs", corev1.PodRunning, map[string]string{"a": "exit 0", "b": "running", "c": "running", "d": "waiting"})
	w.pass()
	delete(w.seen, w.wf.NodeID("cs"))
	w.now = w.now.Add(PodMissingGrace)
	w.pass()
	want := "cs: Pod Error pod deleted\ncs.a: Container Succeeded\ncs.b: Container Error container deleted\n" +
		"cs.c: Container Error container deleted\ncs.d: Container Error container deleted"
	if got := w.tree(); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
}

func TestAContainerSetsMainResultReachesTheNextTask(t *testing.T) {
	w := newCSWorld(t, `
metadata: {name: cs, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: group}
      - {name: b, template: verify, dependencies: [a], arguments: {parameters: [{name: x, value: "{{tasks.a.outputs.result}}"}]}}
  - name: group
    containerSet:
      containers:
      - {name: main, image: python, command: [python, -c], args: ["print('hi')"]}
  - name: verify
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo], args: ["{{inputs.parameters.x}}"]}
`)
	w.pass()
	pod := w.pods.created[w.wf.NodeID("cs.a")]
	if pod == nil || !slices.ContainsFunc(pod.Spec.Containers[1].Env, func(e corev1.EnvVar) bool { return e.Name == "ARGO_INCLUDE_SCRIPT_OUTPUT" && e.Value == "true" }) {
		t.Fatalf("the set's pod does not ask the executor for main's stdout")
	}
	w.podEnds("cs.a", corev1.PodSucceeded, map[string]string{"main": "exit 0"})
	w.results[0].Outputs = &wfv1.Outputs{Result: ptrTo("hi")}
	w.pass()
	if n := p0(w.wf, "cs.a"); n.Outputs == nil || n.Outputs.ExitCode == nil || *n.Outputs.ExitCode != "0" {
		t.Errorf("Pod node outputs %+v, want main's exit code", n.Outputs)
	}
	if n := p0(w.wf, "cs.a.main"); n == nil || n.Type != wfv1.NodeTypeContainer || n.Phase != wfv1.NodeSucceeded {
		t.Errorf("container node cs.a.main = %+v, want a Succeeded Container", n)
	}
	next := w.pods.created[w.wf.NodeID("cs.b")]
	if next == nil || !slices.Equal(next.Spec.Containers[1].Args, []string{"hi"}) {
		t.Errorf("task b's pod %v, want it started with a's result", next)
	}
}

func TestAContainerSetWithARetryStrategyRetriesTheWholePodWithItsContainers(t *testing.T) {
	w := newCSWorld(t, strings.Replace(csGraph, "  - name: main\n    containerSet:", "  - name: main\n    retryStrategy: {limit: 1}\n    containerSet:", 1))
	w.pass()
	w.podEnds("cs(0)", corev1.PodFailed, map[string]string{"a": "exit 1", "b": "waiting", "c": "waiting", "d": "waiting"})
	w.pass()
	w.pass()
	w.podEnds("cs(1)", corev1.PodSucceeded, map[string]string{"a": "exit 0", "b": "exit 0", "c": "exit 0", "d": "exit 0"})
	w.pass()
	want := "cs: Retry Succeeded\ncs(0): Pod Failed a: Error (exit code 1)\ncs(0).a: Container Failed a: Error (exit code 1): \n" +
		"cs(0).b: Container Failed Pod Failed whilst container running\ncs(0).c: Container Failed Pod Failed whilst container running\n" +
		"cs(0).d: Container Failed Pod Failed whilst container running\ncs(1): Pod Succeeded\ncs(1).a: Container Succeeded\n" +
		"cs(1).b: Container Succeeded\ncs(1).c: Container Succeeded\ncs(1).d: Container Succeeded"
	if got := w.tree(); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
	if w.wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("workflow %s (%s), want Succeeded", w.wf.Status.Phase, w.wf.Status.Message)
	}
}
