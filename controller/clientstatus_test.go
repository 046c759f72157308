package controller

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/wfguard/wfguard/extstatus"
)

// clientView is what argo get shows of the status argo writes for its clients.
type clientView struct {
	phase             wfv1.WorkflowPhase
	progress          wfv1.Progress
	rootProgress      wfv1.Progress
	resources         string // the resource names of status.resourcesDuration, sorted
	estimated         wfv1.EstimatedDuration
	rootEstimated     wfv1.EstimatedDuration
	conditions        string // "Type=Status ..." in order
	resourcesMeasured bool   // every resource of the root node measured more than 0 s
}

func viewOf(t *testing.T, f *fixture, u *unstructured.Unstructured) clientView {
	t.Helper()
	wf, _, err := f.c.inflater.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	root := wf.Status.Nodes[wf.Name]
	v := clientView{phase: wf.Status.Phase, progress: wf.Status.Progress, rootProgress: root.Progress,
		estimated: wf.Status.EstimatedDuration, rootEstimated: root.EstimatedDuration, resourcesMeasured: len(root.ResourcesDuration) > 0}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := wf.Status.ResourcesDuration[name]; ok {
			v.resources += string(name) + " "
		}
		if root.ResourcesDuration[name] <= 0 {
			v.resourcesMeasured = false
		}
	}
	for _, c := range wf.Status.Conditions {
		v.conditions += string(c.Type) + "=" + string(c.Status) + " "
	}
	return v
}

// passOver caches objects, reconciles ns/wf once and caches what it stored, as the informer would.
func (f *fixture) passOver(objects ...runtime.Object) *unstructured.Unstructured {
	f.t.Helper()
	f.cache(objects...)
	if _, err := f.c.reconcile(f.t.Context(), "ns/wf"); err != nil {
		f.t.Fatal(err)
	}
	stored := f.storedWorkflow()
	f.cache(stored)
	return stored
}

// createdPod is the pod the controller created, seen in phase: a Running pod's containers run since t0, an
// ended one's ran 10 s.
func (f *fixture) createdPod(phase corev1.PodPhase) *corev1.Pod {
	f.t.Helper()
	pods, err := f.kube.CoreV1().Pods("ns").List(f.t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		f.t.Fatalf("want the one pod created, got %d (%v)", len(pods.Items), err)
	}
	pod := pods.Items[0].DeepCopy()
	pod.UID, pod.ResourceVersion, pod.Spec.NodeName = types.UID("pod-uid"), "2", "node-1"
	pod.Status.Phase = phase
	for _, c := range pod.Spec.Containers {
		s := corev1.ContainerStatus{Name: c.Name}
		if phase == corev1.PodRunning {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}
		} else {
			s.State.Terminated = &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(10 * time.Second))}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, s)
	}
	return pod
}

func completedResult(nodeID string) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: nodeID, ResourceVersion: "3",
		Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: "true", common.LabelKeyWorkflow: "wf"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "wf", UID: "wf-uid"}}}}
}

// succeededRun is an earlier run of WorkflowTemplate tmpl created at created, lasting seconds, its root
// node as long; phase is its phase label.
func succeededRun(t *testing.T, name string, created time.Time, seconds int, phase wfv1.WorkflowPhase) *unstructured.Unstructured {
	start, end := metav1.NewTime(created), metav1.NewTime(created.Add(time.Duration(seconds)*time.Second))
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: start,
		Labels: map[string]string{common.LabelKeyWorkflowTemplate: "tmpl", common.LabelKeyPhase: string(phase), common.LabelKeyCompleted: "true"}},
		Status: wfv1.WorkflowStatus{Phase: phase, StartedAt: start, FinishedAt: end,
			Nodes: wfv1.Nodes{name: {ID: name, Name: name, Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded, StartedAt: start, FinishedAt: end}}}}
	return workflow(t, wf, extstatus.Extensions{}, "1")
}

// A workflow run pass by pass shows what argo get shows under argo: its estimate from the template's newest
// succeeded run when it starts, PodRunning while its pod runs, and at the end its progress, its resource
// durations and the Completed condition, each written with a pass that wrote anyway.
func TestTheStatusArgoWritesForItsClientsFollowsTheRun(t *testing.T) {
	wf := running()
	wf.Status = wfv1.WorkflowStatus{}
	wf.Labels = map[string]string{common.LabelKeyWorkflowTemplate: "tmpl"}
	f := newFixture(t, Options{}, workflow(t, wf, extstatus.Extensions{}, "10"))
	f.cache(workflow(t, wf, extstatus.Extensions{}, "10"),
		succeededRun(t, "run-old", t0.Add(-3*time.Hour), 100, wfv1.WorkflowSucceeded),
		succeededRun(t, "run-new", t0.Add(-2*time.Hour), 30, wfv1.WorkflowSucceeded),
		succeededRun(t, "run-failed", t0.Add(-time.Hour), 5, wfv1.WorkflowFailed))

	steps := []struct {
		sentence string
		pass     func() *unstructured.Unstructured
		want     clientView
	}{
		{"the pass that starts it estimates it from the newest succeeded run of its template, and writes no PodRunning yet",
			func() *unstructured.Unstructured { return f.passOver() },
			clientView{phase: wfv1.WorkflowRunning, progress: "0/1", rootProgress: "0/1", estimated: 30, rootEstimated: 30}},
		{"while its pod runs, PodRunning is True",
			func() *unstructured.Unstructured { return f.passOver(f.createdPod(corev1.PodRunning)) },
			clientView{phase: wfv1.WorkflowRunning, progress: "0/1", rootProgress: "0/1", estimated: 30, rootEstimated: 30, conditions: "PodRunning=True "}},
		{"once its pod succeeded and its result is in, it is complete: progress, resource durations, Completed",
			func() *unstructured.Unstructured {
				return f.passOver(f.createdPod(corev1.PodSucceeded), completedResult("wf"))
			},
			clientView{phase: wfv1.WorkflowSucceeded, progress: "1/1", rootProgress: "1/1", resources: "cpu memory ", resourcesMeasured: true,
				estimated: 30, rootEstimated: 30, conditions: "PodRunning=False Completed=True "}},
	}
	for _, s := range steps {
		if got := viewOf(t, f, s.pass()); got != s.want {
			t.Fatalf("%s:\n got  %+v\n want %+v", s.sentence, got, s.want)
		}
	}
	if n := f.c.engine.Estimates.Len(); n != 0 {
		t.Errorf("%d estimates kept after the workflow completed", n)
	}
}

// The derived fields follow the nodes: a pass that changed nothing writes nothing, even over a status
// stored without them (written before wfguard derived them, or by another controller).
func TestAPassThatChangesNoNodeWritesNoDerivedField(t *testing.T) {
	step := podNode("wf", wfv1.NodeRunning, t0)
	step.ID, step.HostNodeName = "wf", "node-1"
	wf := running(step)
	u := workflow(t, wf, extstatus.Extensions{}, "10")
	f := newFixture(t, Options{}, u)
	pod := podOf(wf, step, corev1.PodRunning)
	pod.Spec.NodeName = "node-1"
	f.cache(u, pod)
	f.c.recordWrite(u) // ours: no adoption check
	if _, err := f.c.reconcile(t.Context(), "ns/wf"); err != nil {
		t.Fatal(err)
	}
	if got := calls(f.dynamic); len(got) != 0 {
		stored, _, _ := f.c.inflater.FromUnstructured(f.storedWorkflow())
		t.Errorf("a pass that changed nothing made %q: %s", got, diff.Diff(wf.Status, stored.Status))
	}
}

func TestPodRunningCountsAreTheCachedWorkflowsConditions(t *testing.T) {
	f := newFixture(t, Options{})
	for i, status := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, ""} {
		wf := running()
		wf.Name, wf.UID = "wf-"+string(rune('a'+i)), types.UID("uid-"+string(rune('a'+i)))
		if status != "" {
			wf.Status.Conditions = wfv1.Conditions{{Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionTrue}, {Type: wfv1.ConditionTypePodRunning, Status: status}}
		}
		f.cache(workflow(t, wf, extstatus.Extensions{}, "1"))
	}
	got := f.c.PodRunningCounts()
	if len(got) != 2 || got["True"] != 1 || got["False"] != 2 {
		t.Errorf("PodRunning counts %v, want True 1, False 2 (a workflow without the condition counts in neither)", got)
	}
}
