package engine

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// runToEnd runs manifest through passes in which every pod created so far is seen ended in podPhase with
// its complete task result; it returns the workflow and the pods created.
func runToEnd(t *testing.T, e *Engine, manifest string, podPhase corev1.PodPhase) (*wfv1.Workflow, *recordingPods) {
	t.Helper()
	return runToEndWith(t, e, manifest, podPhase, func(*Pass) {})
}

// runToEndWith is runToEnd calling persisted after each pass, as the controller publishes a persisted pass.
func runToEndWith(t *testing.T, e *Engine, manifest string, podPhase corev1.PodPhase, persisted func(*Pass)) (*wfv1.Workflow, *recordingPods) {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e.Pods = pods
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for pass := 0; pass < 12 && !wf.Status.Phase.Completed(); pass++ {
		p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour,
			AtStart: StartStateOf(wf)}
		var results []*wfv1.WorkflowTaskResult
		for id, pod := range pods.created {
			p.Pods[id] = podIn(pod, podPhase, false, "")
			results = append(results, completeResult(wf, id))
		}
		taskresult.Merge(p.WF, results, p.Pods)
		p.Results = taskresult.Owned(p.WF, results, p.Pods)
		AssessNodes(p)
		if _, err := e.Start(p); err != nil {
			t.Fatal(err)
		}
		if err := e.Execute(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		persisted(p)
		now = now.Add(time.Second)
	}
	return wf, pods
}

// nodeTree is the compat suite's view of the nodes: name → "displayName type phase", sorted.
func nodeTree(wf *wfv1.Workflow) string {
	var lines []string
	for _, n := range wf.Status.Nodes {
		lines = append(lines, n.Name+" → "+n.DisplayName+" "+string(n.Type)+" "+string(n.Phase))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestTemplateFeaturesRunWithArgosNodeTree(t *testing.T) {
	const meta = "metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}\n"
	for _, tc := range []struct {
		sentence string
		spec     string
		phase    wfv1.WorkflowPhase
		message  string // substring
		tree     []string
	}{
		{"templateDefaults give every template their retryStrategy, steps included, as argo merges them",
			`spec:
  entrypoint: main
  templateDefaults: {timeout: 30s, retryStrategy: {limit: "2"}}
  templates:
  - {name: main, steps: [[{name: a, template: echo}]]}
  - {name: echo, container: {image: alpine, command: [echo]}}`,
			wfv1.WorkflowSucceeded, "", []string{
				"wf → wf Retry Succeeded", "wf(0) → wf(0) Steps Succeeded", "wf(0)[0] → [0] StepGroup Succeeded",
				"wf(0)[0].a → a Retry Succeeded", "wf(0)[0].a(0) → a(0) Pod Succeeded"}},
		{"a template's own field wins over templateDefaults",
			`spec:
  entrypoint: main
  templateDefaults: {retryStrategy: {limit: "2"}}
  templates:
  - {name: main, retryStrategy: {limit: "0"}, steps: [[{name: a, template: echo}]]}
  - {name: echo, retryStrategy: {limit: "0"}, container: {image: alpine, command: [echo]}}`,
			wfv1.WorkflowSucceeded, "", []string{
				"wf → wf Retry Succeeded", "wf(0) → wf(0) Steps Succeeded", "wf(0)[0] → [0] StepGroup Succeeded",
				"wf(0)[0].a → a Retry Succeeded", "wf(0)[0].a(0) → a(0) Pod Succeeded"}},
		{"a step's inline template runs as the step's pod",
			`spec:
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: a, inline: {container: {image: alpine, command: [echo]}}}]]}`,
			wfv1.WorkflowSucceeded, "", []string{"wf → wf Steps Succeeded", "wf[0] → [0] StepGroup Succeeded", "wf[0].a → a Pod Succeeded"}},
		{"a step whose pod cannot be built errors its step group with argo's message, as argo's inline example without a command",
			`spec:
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: a, inline: {container: {image: argoproj/argosay:v2}}}]]}`,
			wfv1.WorkflowFailed, "step group deemed errored due to child wf[0].a error: failed to look-up entrypoint/cmd for image", []string{
				"wf → wf Steps Failed", "wf[0] → [0] StepGroup Error", "wf[0].a → a Pod Error"}},
		{"a task's inline template runs as the task's pod, and an inline steps template runs its own steps",
			`spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, inline: {container: {image: alpine, command: [echo]}}}
      - {name: b, depends: a, inline: {steps: [[{name: c, inline: {container: {image: alpine, command: [echo]}}}]]}}`,
			wfv1.WorkflowSucceeded, "", []string{"wf → wf DAG Succeeded", "wf.a → a Pod Succeeded", "wf.b → b Steps Succeeded",
				"wf.b[0] → [0] StepGroup Succeeded", "wf.b[0].c → c Pod Succeeded"}},
		{"dag.target runs only the target tasks and what they depend on",
			`spec:
  entrypoint: main
  arguments: {parameters: [{name: target, value: E}]}
  templates:
  - name: main
    dag:
      target: "{{workflow.parameters.target}}"
      tasks:
      - {name: A, template: echo}
      - {name: B, depends: A, template: echo}
      - {name: C, depends: A, template: echo}
      - {name: D, depends: B && C, template: echo}
      - {name: E, depends: C, template: echo}
  - {name: echo, container: {image: alpine, command: [echo]}}`,
			wfv1.WorkflowSucceeded, "", []string{"wf → wf DAG Succeeded", "wf.A → A Pod Succeeded", "wf.C → C Pod Succeeded", "wf.E → E Pod Succeeded"}},
		{"a dag.target naming no task errors the DAG with argo's message",
			`spec:
  entrypoint: main
  arguments: {parameters: [{name: target, value: Z}]}
  templates:
  - name: main
    dag:
      target: "{{workflow.parameters.target}}"
      tasks:
      - {name: A, template: echo}
  - {name: echo, container: {image: alpine, command: [echo]}}`,
			wfv1.WorkflowError, "templates.main.targets: target 'Z' is not defined", []string{"wf → wf DAG Error"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, _ := runToEnd(t, &Engine{}, meta+tc.spec, corev1.PodSucceeded)
			if wf.Status.Phase != tc.phase || !strings.Contains(wf.Status.Message, tc.message) {
				t.Fatalf("workflow %s %q, want %s with %q\n%s", wf.Status.Phase, wf.Status.Message, tc.phase, tc.message, nodeTree(wf))
			}
			sort.Strings(tc.tree)
			if got, want := nodeTree(wf), strings.Join(tc.tree, "\n"); got != want {
				t.Errorf("node tree:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestTemplateDefaultsAndInlineTemplatesShapeThePod(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  arguments: {parameters: [{name: mem, value: 100Mi}]}
  podSpecPatch: |
    containers:
    - name: main
      resources: {limits: {memory: "{{workflow.parameters.mem}}"}}
  templateDefaults: {activeDeadlineSeconds: 60, container: {image: busybox, command: [echo]}}
  templates:
  - {name: main, steps: [[{name: a, inline: {container: {args: [hi]}}}]]}`
	wf, pods := runToEnd(t, &Engine{}, manifest, corev1.PodSucceeded)
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow %s %q\n%s", wf.Status.Phase, wf.Status.Message, nodeTree(wf))
	}
	a := p0(wf, "wf[0].a")
	pod := pods.created[a.ID]
	for _, tc := range []struct {
		sentence  string
		got, want any
	}{
		{"an inline template's node records no template name, as argo's", a.TemplateName, ""},
		{"an inline template's pod is named without a template name", pod.Name, podspec.PodName("wf", "wf[0].a", "", a.ID)},
		{"the container defaults fill the inline container's image", pod.Spec.Containers[1].Image, "busybox"},
		{"the container defaults fill its command", strings.HasSuffix(strings.Join(pod.Spec.Containers[1].Command, " "), " -- echo"), true},
		{"activeDeadlineSeconds comes from the defaults", *pod.Spec.ActiveDeadlineSeconds, int64(60)},
		{"the workflow's podSpecPatch is applied with its parameter substituted", pod.Spec.Containers[1].Resources.Limits.Memory().String(), "100Mi"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.sentence, tc.got, tc.want)
		}
	}
}

func TestAnInlineTemplateIsCheckedByTheSameRulesAsANamedOne(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		spec     string
		want     string // "" = accepted
	}{
		{"a plain inline container is accepted",
			`{entrypoint: main, templates: [{name: main, steps: [[{name: a, inline: {container: {image: alpine}}}]]}]}`, ""},
		{"an inline template using an unsupported feature is refused at start, naming the step",
			`{entrypoint: main, templates: [{name: main, dag: {tasks: [{name: a, inline: {http: {url: "http://example.test"}}}]}}]}`,
			"not supported by wfguard yet: template main: task a: inline: http template (argo runs it in its agent pod, which wfguard does not run)"},
		{"templateDefaults and dag.target are accepted",
			`{entrypoint: main, templateDefaults: {timeout: 1m}, templates: [{name: main, dag: {target: a, tasks: [{name: a, template: main}]}}]}`, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(tc.spec), &wf.Spec); err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := unsupported(wf); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("unsupported = %q, want %q", got, tc.want)
			}
		})
	}
}
