package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// stopRecorder records which pods were stopped and which deleted.
type stopRecorder struct{ stopped, deleted []string }

func (r *stopRecorder) CreatePod(context.Context, *corev1.Pod) error { return nil }
func (r *stopRecorder) StopPod(_ context.Context, pod *corev1.Pod) error {
	r.stopped = append(r.stopped, pod.Name)
	return nil
}
func (r *stopRecorder) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r.deleted = append(r.deleted, pod.Name)
	return nil
}

// adoptedRunning is a workflow argo started: its first step done, a pod running, another not yet scheduled.
const adoptedRunning = `
metadata: {name: adopted, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: t}], [{name: b, template: t}, {name: c, template: t}]]
  - {name: t, container: {image: alpine, command: ["true"]}}
status:
  phase: Running
  startedAt: "2026-12-04T10:00:00Z"
  nodes:
    adopted: {id: adopted, name: adopted, displayName: adopted, type: Steps, phase: Running, templateName: main}
    adopted-1: {id: adopted-1, name: "adopted[0].a", displayName: a, type: Pod, phase: Succeeded, templateName: t}
    adopted-2: {id: adopted-2, name: "adopted[1].b", displayName: b, type: Pod, phase: Running, templateName: t}
    adopted-3: {id: adopted-3, name: "adopted[1].c", displayName: c, type: Pod, phase: Pending, templateName: t}
`

func adoptionPass(t *testing.T, adopting bool, change func(*wfv1.Workflow)) *Pass {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(adoptedRunning), wf); err != nil {
		t.Fatal(err)
	}
	change(wf)
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase}}
	}
	return &Pass{WF: wf, Adopting: adopting, Now: metav1.Now().Time, Pods: map[string]*corev1.Pod{
		"adopted-1": pod("adopted-t-1", "node", corev1.PodSucceeded),
		"adopted-2": pod("adopted-t-2", "node", corev1.PodRunning),
		"adopted-3": pod("adopted-t-3", "", corev1.PodPending),
	}}
}

func TestARunningWorkflowAnotherControllerStartedIsAdoptedOnlyWhenWFGuardCanCarryItOn(t *testing.T) {
	http := func(wf *wfv1.Workflow) {
		wf.Spec.Templates[1].Container, wf.Spec.Templates[1].HTTP = nil, &wfv1.HTTP{URL: "https://x"}
	}
	for _, tc := range []struct {
		sentence string
		adopting bool
		change   func(*wfv1.Workflow)
		// refused is a part of the message the workflow ends Error with; "" when it is carried on.
		refused string
	}{
		{"a workflow of steps and containers is carried on as it stands", true, func(*wfv1.Workflow) {}, ""},
		{"a workflow with an http template ends Error: wfguard does not run argo's agent", true, http,
			"http template (argo runs it in its agent pod, which wfguard does not run)"},
		{"a workflow whose node status argo offloaded to its database ends Error: wfguard cannot read it", true,
			func(wf *wfv1.Workflow) { wf.Status.OffloadNodeStatusVersion, wf.Status.Nodes = "fnv:123", nil },
			`its node status is offloaded to argo's persistence database (status.offloadNodeStatusVersion "fnv:123")`},
		{"a workflow with a refused template among its stored ones ends Error", true, func(wf *wfv1.Workflow) {
			wf.Status.StoredTemplates = map[string]wfv1.Template{"namespaced/wt/h": {Name: "h", HTTP: &wfv1.HTTP{URL: "https://x"}}}
		}, "template namespaced/wt/h: http template"},
		{"a workflow this controller wrote since it started is not checked again", false, http, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			pods := &stopRecorder{}
			e := &Engine{Pods: pods}
			p := adoptionPass(t, tc.adopting, tc.change)
			before := p.WF.DeepCopy()
			started, err := e.Start(p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused == "" {
				if !started || len(p.Events) > 0 || len(pods.stopped)+len(pods.deleted) > 0 || p.WF.Status.Phase != before.Status.Phase {
					t.Errorf("carried on = %v, events %v, stopped %v, deleted %v, phase %s; want it carried on untouched",
						started, p.Events, pods.stopped, pods.deleted, p.WF.Status.Phase)
				}
				return
			}
			if started || p.WF.Status.Phase != wfv1.WorkflowError || !strings.Contains(p.WF.Status.Message, tc.refused) ||
				!strings.HasPrefix(p.WF.Status.Message, "wfguard cannot carry on this workflow another controller started: ") {
				t.Errorf("started %v, phase %s, message %q; want Error with a message containing %q", started, p.WF.Status.Phase, p.WF.Status.Message, tc.refused)
			}
			if p.WF.Labels["workflows.argoproj.io/completed"] != "true" {
				t.Errorf("labels %v, want completed=true", p.WF.Labels)
			}
			if !slices.Equal(pods.stopped, []string{"adopted-t-2"}) || !slices.Equal(pods.deleted, []string{"adopted-t-3"}) {
				t.Errorf("stopped %v and deleted %v; want the running pod stopped and the unscheduled one deleted", pods.stopped, pods.deleted)
			}
			for _, n := range p.WF.Status.Nodes {
				if !n.Phase.Completed() {
					t.Errorf("node %s left %s in a completed workflow", n.Name, n.Phase)
				}
			}
			if n := p.WF.Status.Nodes["adopted-1"]; len(p.WF.Status.Nodes) > 0 && n.Phase != wfv1.NodeSucceeded {
				t.Errorf("the done node became %s, want it kept Succeeded", n.Phase)
			}
			if !slices.ContainsFunc(p.Events, func(ev Event) bool {
				return ev.Warning && ev.Reason == ReasonAdoptionRefused && ev.Message == p.WF.Status.Message
			}) {
				t.Errorf("events %v, want a Warning %s with the workflow's message", p.Events, ReasonAdoptionRefused)
			}
		})
	}
}
