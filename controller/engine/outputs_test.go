package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// runChain runs the chain workflow (a produces out, b consumes it) with manifest's produce template: a's
// pod succeeds and its result is finalized with outputs; it returns the workflow and the pods created.
func runChain(t *testing.T, manifest string, outputs *wfv1.Outputs) (*wfv1.Workflow, *recordingPods, []Event) {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	aID := wf.NodeID(wf.Name + "[0].a")
	var events []Event
	for range 4 {
		p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
		var results []*wfv1.WorkflowTaskResult
		if pod, ok := pods.created[aID]; ok {
			seen := pod.DeepCopy()
			seen.Status.Phase = corev1.PodSucceeded
			seen.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "wait", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
				{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
			p.Pods[aID] = seen
			r := completeResult(wf, aID)
			r.Outputs = outputs.DeepCopy()
			results = append(results, r)
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
		events = append(events, p.Events...)
		now = now.Add(time.Second)
	}
	for _, pod := range pods.created {
		if err := refuseUnresolvedOutputs(pod); err != nil {
			t.Errorf("I8: a pod was created with an unresolved output reference: %v", err)
		}
	}
	return wf, pods, events
}

func TestAFinalizedResultWithoutADeclaredOutputErrorsItsNodeAndStartsNoSuccessor(t *testing.T) {
	withDefault := strings.Replace(chain, "valueFrom: {path: /tmp/out}", "valueFrom: {path: /tmp/out, default: d}", 1)
	undeclared := strings.Replace(chain, "outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}", "outputs: {}", 1)
	out := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}}
	for _, tc := range []struct {
		sentence  string
		manifest  string
		outputs   *wfv1.Outputs
		wantA     wfv1.NodePhase
		wantAMsg  string // substring
		wantB     wfv1.NodePhase
		wantBArgs string // the value b's pod runs with; "" = no pod
		wantBMsg  string
	}{
		{"a result with the declared output lets a succeed and b run with its value",
			chain, out, wfv1.NodeSucceeded, "", wfv1.NodePending, "v", ""},
		{"a finalized result without the declared output errors a, naming it, and b never starts",
			chain, nil, wfv1.NodeError, "required outputs are not set: the executor finalized the task result of pod", "", "", ""},
		{"the message names the missing parameter",
			chain, &wfv1.Outputs{}, wfv1.NodeError, "without parameter out", "", "", ""},
		{"a missing output with valueFrom.default takes the default, and b runs with it",
			withDefault, nil, wfv1.NodeSucceeded, "", wfv1.NodePending, "d", ""},
		{"a reference to an output nobody declared or set errors b instead of creating its pod",
			undeclared, nil, wfv1.NodeSucceeded, "", wfv1.NodeError, "", "refusing to create a pod with an unresolved output reference: {{steps.a.outputs.parameters.out}}"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods, events := runChain(t, tc.manifest, tc.outputs)
			a, b := p0(wf, "chain[0].a"), p0(wf, "chain[1].b")
			if a == nil || a.Phase != tc.wantA || !strings.Contains(a.Message, tc.wantAMsg) {
				t.Fatalf("a = %+v, want %s with message containing %q", a, tc.wantA, tc.wantAMsg)
			}
			if tc.wantA == wfv1.NodeError {
				found := false
				for _, ev := range events {
					found = found || (ev.Reason == ReasonMissingOutputs && ev.Warning && strings.Contains(ev.Message, "chain[0].a"))
				}
				if !found {
					t.Errorf("no Warning %s event for a: %+v", ReasonMissingOutputs, events)
				}
				if !wf.Status.Phase.Completed() || wf.Status.Phase == wfv1.WorkflowSucceeded {
					t.Errorf("workflow %s, want it to end unsuccessfully", wf.Status.Phase)
				}
			}
			if tc.wantB == "" {
				if b != nil {
					t.Fatalf("b started: %+v", b)
				}
				return
			}
			if b == nil || b.Phase != tc.wantB || !strings.Contains(b.Message, tc.wantBMsg) {
				t.Fatalf("b = %+v, want %s with message containing %q", b, tc.wantB, tc.wantBMsg)
			}
			pod, ok := pods.created[b.ID]
			if tc.wantBArgs == "" {
				if ok {
					t.Fatalf("b's pod was created: %v", pod.Spec.Containers[1].Command)
				}
				return
			}
			if !ok || !strings.Contains(strings.Join(pod.Spec.Containers[1].Command, " "), tc.wantBArgs) {
				t.Fatalf("b's pod = %v, want it to run with %q", ok, tc.wantBArgs)
			}
		})
	}
}

const timedApproval = `
metadata: {name: timed, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - {name: after, template: report, arguments: {parameters: [{name: answer, value: "{{steps.approve.outputs.parameters.answer}}"}]}}
  - name: approve
    suspend: {duration: "10s"}
    outputs: {parameters: [{name: answer, valueFrom: {supplied: {}%s}}]}
  - name: report
    inputs: {parameters: [{name: answer}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.answer}}"]}
`

func TestASuspendDurationThatExpiresAppliesTheOutputDefaults(t *testing.T) {
	for _, tc := range []struct {
		sentence    string
		def         string
		wantApprove wfv1.NodePhase
		wantMessage string
		wantArg     string // after's argument; "" = after never starts
	}{
		{"an expired suspend gives its output the default and the next step runs with it", ", default: maybe", wfv1.NodeSucceeded, "", "maybe"},
		{"an expired suspend whose output has no default errors, as argo does", "", wfv1.NodeError,
			"raw output parameter 'answer' has not been set and does not have a default value", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(timedApproval, tc.def)), wf); err != nil {
				t.Fatal(err)
			}
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			e := &Engine{Pods: pods}
			now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			for _, at := range []time.Duration{0, time.Second, 11 * time.Second, 12 * time.Second} {
				runPass(t, e, wf, now.Add(at))
				if at == time.Second {
					if n := p0(wf, "timed[0].approve"); n == nil || n.Phase != wfv1.NodeRunning || n.Outputs == nil || n.Outputs.Parameters[0].ValueFrom.Supplied == nil {
						t.Fatalf("while suspended, approve = %+v; want Running with its supplied output awaiting a value", n)
					}
				}
			}
			approve := p0(wf, "timed[0].approve")
			if approve.Phase != tc.wantApprove || approve.Message != tc.wantMessage {
				t.Fatalf("approve = %s %q, want %s %q", approve.Phase, approve.Message, tc.wantApprove, tc.wantMessage)
			}
			after := p0(wf, "timed[1].after")
			if tc.wantArg == "" {
				if after != nil {
					t.Fatalf("after started: %+v", after)
				}
				return
			}
			pod, ok := pods.created[after.ID]
			if !ok || !slices.Contains(pod.Spec.Containers[1].Command, tc.wantArg) {
				t.Fatalf("after's pod = %v, want it to run with %q", ok, tc.wantArg)
			}
		})
	}
}

func TestAPodWithAnUnresolvedOutputReferenceIsRefused(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		value    string
		refused  bool
	}{
		{"a step output parameter", "echo {{steps.s1.outputs.parameters.out}}", true},
		{"a task result", "{{tasks.a.outputs.result}}", true},
		{"a workflow output, spaced", "{{ workflow.outputs.parameters.x }}", true},
		{"an expression", "{{=steps['s1'].outputs.parameters.out}}", true},
		{"an artifact reference", `{"from":"{{steps.s1.outputs.artifacts.a}}"}`, true},
		{"a resolved value", "echo v", false},
		{"an input reference is not an output", "{{inputs.parameters.x}}", false},
		{"a helm value named outputs is not argo's", "{{ .Values.outputs }}", false},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "X", Value: tc.value}}}}}}
		if err := refuseUnresolvedOutputs(pod); (err != nil) != tc.refused {
			t.Errorf("%s: err = %v, want refused %v", tc.sentence, err, tc.refused)
		}
	}
}

func TestTheTemplatesCustomMetricsMayNameItsOwnOutputs(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		template string // ARGO_TEMPLATE
		refused  bool
	}{
		{"a metric's value naming the template's output parameter, resolved at completion",
			`{"name":"t","container":{"image":"alpine"},"metrics":{"prometheus":[{"name":"m","help":"h","histogram":{"value":"{{outputs.parameters.n}}"}}]}}`, false},
		{"the same reference in the container is still refused",
			`{"name":"t","container":{"image":"alpine","args":["{{steps.s.outputs.parameters.n}}"]},"metrics":{"prometheus":[{"name":"m","help":"h","counter":{"value":"1"}}]}}`, true},
		{"a template that does not decode is checked whole",
			`{"name": 1, "x": "{{steps.s.outputs.result}}"}`, true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: common.EnvVarTemplate, Value: tc.template}}}}}}
			if err := refuseUnresolvedOutputs(pod); (err != nil) != tc.refused {
				t.Errorf("err = %v, want refused %v", err, tc.refused)
			}
		})
	}
}
