package clientstatus

import (
	"errors"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(seconds int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(seconds) * time.Second)) }

func workflowOf(nodes ...wfv1.NodeStatus) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "uid-wf"}, Status: wfv1.WorkflowStatus{Nodes: wfv1.Nodes{}}}
	for _, n := range nodes {
		if n.Name == "" {
			n.Name = "wf." + n.ID
		}
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

func TestValidProgressIsArgosRuleWithoutItsPanic(t *testing.T) {
	tests := []struct {
		sentence string
		progress wfv1.Progress
		want     bool
	}{
		{"N/M with 0 <= N <= M and M > 0 is valid", "3/10", true},
		{"a finished progress is valid", "10/10", true},
		{"no progress is not valid", "", false},
		{"more done than there is is not valid", "11/10", false},
		{"nothing to do is not valid (argo's ProgressZero is a sum's start, not a node's)", "0/0", false},
		{"a progress without '/' is not valid, where argo's IsValid panics", "5", false},
		{"words are not valid", "half/done", false},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			if got := ValidProgress(tt.progress); got != tt.want {
				t.Errorf("ValidProgress(%q) = %v, want %v", tt.progress, got, tt.want)
			}
		})
	}
}

func TestAnnotatedProgressIsTheInitialProgressOfAPodsNode(t *testing.T) {
	tests := []struct {
		sentence    string
		annotations map[string]string
		want        wfv1.Progress
		ok          bool
	}{
		{"the progress annotation of the pod's metadata is its node's first progress", map[string]string{common.AnnotationKeyProgress: "0/20"}, "0/20", true},
		{"a pod without the annotation gives none", nil, "", false},
		{"an invalid annotation gives none", map[string]string{common.AnnotationKeyProgress: "7"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			got, ok := AnnotatedProgress(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}})
			if got != tt.want || ok != tt.ok {
				t.Errorf("AnnotatedProgress = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestProgressIsArgosSumOfTheExecutableNodes(t *testing.T) {
	steps := wfv1.NodeStatus{ID: "wf", Name: "wf", Type: wfv1.NodeTypeSteps, Phase: wfv1.NodeRunning, Children: []string{"g"}}
	group := wfv1.NodeStatus{ID: "g", Type: wfv1.NodeTypeStepGroup, Phase: wfv1.NodeRunning, Children: []string{"a", "b", "c"}}
	pod := func(id string, phase wfv1.NodePhase, p wfv1.Progress) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: id, Type: wfv1.NodeTypePod, Phase: phase, Progress: p}
	}
	tests := []struct {
		sentence  string
		nodes     []wfv1.NodeStatus
		wantWF    wfv1.Progress
		wantNodes map[string]wfv1.Progress
	}{
		{"a pod node without progress counts 0/1, and a succeeded one is complete",
			[]wfv1.NodeStatus{steps, group, pod("a", wfv1.NodeSucceeded, ""), pod("b", wfv1.NodeRunning, ""), pod("c", wfv1.NodePending, "")},
			"1/3", map[string]wfv1.Progress{"a": "1/1", "b": "0/1", "c": "0/1", "g": "1/3", "wf": "1/3"}},
		{"a running pod keeps the progress its task result reported, and the sums weigh it",
			[]wfv1.NodeStatus{steps, group, pod("a", wfv1.NodeRunning, "25/100"), pod("b", wfv1.NodeSucceeded, "3/4"), pod("c", wfv1.NodeFailed, "")},
			"29/105", map[string]wfv1.Progress{"a": "25/100", "b": "4/4", "c": "0/1", "wf": "29/105"}},
		{"a skipped or omitted node is complete like a succeeded one",
			[]wfv1.NodeStatus{steps, group, pod("a", wfv1.NodeSkipped, ""), pod("b", wfv1.NodeOmitted, ""), pod("c", wfv1.NodeSucceeded, "")},
			"3/3", map[string]wfv1.Progress{"a": "1/1", "b": "1/1", "wf": "3/3"}},
		{"a pod node whose progress is not valid starts again at 0/1, as argo's pod assessment resets it",
			[]wfv1.NodeStatus{steps, group, pod("a", wfv1.NodeRunning, "9/3"), pod("b", wfv1.NodeRunning, "5"), pod("c", wfv1.NodeRunning, "1/2")},
			"1/4", map[string]wfv1.Progress{"a": "0/1", "b": "0/1", "c": "1/2"}},
		{"a suspend node counts as executable, and one with a progress argo would panic on is reset",
			[]wfv1.NodeStatus{{ID: "wf", Name: "wf", Type: wfv1.NodeTypeSteps, Children: []string{"s"}}, {ID: "s", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeRunning, Progress: "x"}},
			"0/1", map[string]wfv1.Progress{"s": "0/1", "wf": "0/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			wf := workflowOf(tt.nodes...)
			Update(wf, nil, true)
			if wf.Status.Progress != tt.wantWF {
				t.Errorf("status.progress = %q, want %q", wf.Status.Progress, tt.wantWF)
			}
			for id, want := range tt.wantNodes {
				if got := wf.Status.Nodes[id].Progress; got != want {
					t.Errorf("node %s progress = %q, want %q", id, got, want)
				}
			}
		})
	}
}

// ranPod is a pod whose main container requested cpu and ran seconds, beside a wait container with no
// requests that ran as long.
func ranPod(cpu string, seconds int) *corev1.Pod {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at(0), FinishedAt: at(seconds)}}
	return &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "wait"},
			{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "wait", State: terminated}, {Name: "main", State: terminated}}},
	}
}

func TestResourcesDurationIsArgosFormulaSummedUpTheTree(t *testing.T) {
	synced := true
	done := func(id string) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: id, Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded, TaskResultSynced: &synced}
	}
	dag := wfv1.NodeStatus{ID: "wf", Name: "wf", Type: wfv1.NodeTypeDAG, Phase: wfv1.NodeSucceeded, Children: []string{"a", "b"}}
	running := dag
	running.Phase = wfv1.NodeRunning
	measured := done("b")
	measured.ResourcesDuration = wfv1.ResourcesDuration{corev1.ResourceCPU: 100}
	waiting := done("b")
	waiting.Phase, waiting.TaskResultSynced = wfv1.NodeRunning, new(bool)
	tests := []struct {
		sentence string
		nodes    []wfv1.NodeStatus
		pods     map[string]*corev1.Pod
		want     map[string]wfv1.ResourcesDuration // by node ID, "" for the workflow
	}{
		{"a finished pod node is measured from its pod: requests (else 100m CPU, 100Mi memory) times seconds run, per container",
			[]wfv1.NodeStatus{dag, done("a")},
			map[string]*corev1.Pod{"a": ranPod("1", 10)},
			// main: 1 CPU x 10 s + 100Mi x 10 s; wait: 100m x 10 s = 1 s + 100Mi x 10 s
			map[string]wfv1.ResourcesDuration{"a": {corev1.ResourceCPU: 11, corev1.ResourceMemory: 20}, "wf": {corev1.ResourceCPU: 11, corev1.ResourceMemory: 20}, "": {corev1.ResourceCPU: 11, corev1.ResourceMemory: 20}}},
		{"a pod node measured once keeps its measure, and the sums add it",
			[]wfv1.NodeStatus{dag, done("a"), measured},
			map[string]*corev1.Pod{"a": ranPod("2", 5), "b": ranPod("2", 500)},
			map[string]wfv1.ResourcesDuration{"a": {corev1.ResourceCPU: 10, corev1.ResourceMemory: 10}, "b": {corev1.ResourceCPU: 100}, "": {corev1.ResourceCPU: 110, corev1.ResourceMemory: 10}}},
		{"a finished pod node whose pod is gone has no measure",
			[]wfv1.NodeStatus{dag, done("a"), done("b")}, nil,
			map[string]wfv1.ResourcesDuration{"a": nil, "wf": {}, "": {}}},
		{"a pod node still waiting for its task result is not measured yet, nor is its running parent summed",
			[]wfv1.NodeStatus{running, waiting},
			map[string]*corev1.Pod{"b": ranPod("1", 10)},
			map[string]wfv1.ResourcesDuration{"b": nil, "wf": nil, "": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			wf := workflowOf(tt.nodes...)
			Update(wf, tt.pods, true)
			for id, want := range tt.want {
				got := wf.Status.ResourcesDuration
				if id != "" {
					got = wf.Status.Nodes[id].ResourcesDuration
				}
				if !sameDurations(got, want) { // none and empty encode alike
					t.Errorf("resourcesDuration of %q = %v, want %v", id, got, want)
				}
			}
		})
	}
}

func TestPodRunningFollowsThePodNodes(t *testing.T) {
	tests := []struct {
		sentence string
		nodes    []wfv1.NodeStatus
		assessed bool
		want     wfv1.Conditions
	}{
		{"a running pod node makes PodRunning True",
			[]wfv1.NodeStatus{{ID: "a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeRunning}, {ID: "b", Type: wfv1.NodeTypePod, Phase: wfv1.NodePending}}, true,
			wfv1.Conditions{{Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionTrue}}},
		{"pending and finished pod nodes make it False",
			[]wfv1.NodeStatus{{ID: "a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded}, {ID: "b", Type: wfv1.NodeTypePod, Phase: wfv1.NodePending}}, true,
			wfv1.Conditions{{Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionFalse}}},
		{"a running steps node is no running pod",
			[]wfv1.NodeStatus{{ID: "wf", Name: "wf", Type: wfv1.NodeTypeSteps, Phase: wfv1.NodeRunning}}, true,
			wfv1.Conditions{{Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionFalse}}},
		{"the pass that starts the workflow assessed no pod and writes no PodRunning, as argo's first pass",
			[]wfv1.NodeStatus{{ID: "a", Type: wfv1.NodeTypePod, Phase: wfv1.NodePending}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			wf := workflowOf(tt.nodes...)
			Update(wf, nil, tt.assessed)
			if len(wf.Status.Conditions) != len(tt.want) || (len(tt.want) > 0 && wf.Status.Conditions[0] != tt.want[0]) {
				t.Errorf("conditions = %v, want %v", wf.Status.Conditions, tt.want)
			}
		})
	}
}

func TestConditionsKeepTheirOrderAndCompletedIsUpserted(t *testing.T) {
	wf := workflowOf(wfv1.NodeStatus{ID: "a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeRunning})
	wf.Status.Conditions = wfv1.Conditions{{Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionFalse}}
	Update(wf, nil, true)
	wf.Status.Nodes["a"] = wfv1.NodeStatus{ID: "a", Name: "wf.a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeFailed}
	Update(wf, nil, true)
	MarkCompleted(wf)
	want := wfv1.Conditions{{Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionTrue}, {Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionFalse}}
	if len(wf.Status.Conditions) != 2 || wf.Status.Conditions[0] != want[0] || wf.Status.Conditions[1] != want[1] {
		t.Errorf("conditions = %v, want %v", wf.Status.Conditions, want)
	}
}

func TestAWorkflowCompletedBeforeAnyPodRunningGetsBothInArgosOrder(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		wf       *wfv1.Workflow
		want     []wfv1.ConditionType
	}{
		{"a workflow whose nodes ended before a pass recorded PodRunning gets PodRunning, then Completed",
			workflowOf(wfv1.NodeStatus{ID: "a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeFailed}),
			[]wfv1.ConditionType{wfv1.ConditionTypePodRunning, wfv1.ConditionTypeCompleted}},
		{"a workflow refused at start, without nodes, gets Completed only, as argo's first pass",
			&wfv1.Workflow{}, []wfv1.ConditionType{wfv1.ConditionTypeCompleted}},
	} {
		MarkCompleted(tc.wf)
		var got []wfv1.ConditionType
		for _, c := range tc.wf.Status.Conditions {
			got = append(got, c.Type)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: conditions %v, want %v", tc.sentence, got, tc.want)
		}
	}
}

func TestClearDerivedLeavesWhatThePassDecided(t *testing.T) {
	s := wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Progress: "1/2", ResourcesDuration: wfv1.ResourcesDuration{corev1.ResourceCPU: 1},
		Conditions: wfv1.Conditions{{Type: wfv1.ConditionTypeMetricsError, Status: metav1.ConditionTrue}, {Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionTrue}}}
	original := s.Conditions
	ClearDerived(&s)
	if s.Progress != "" || s.ResourcesDuration != nil || len(s.Conditions) != 1 || s.Conditions[0].Type != wfv1.ConditionTypeMetricsError || s.Phase != wfv1.WorkflowRunning {
		t.Errorf("cleared status = %+v", s)
	}
	if len(original) != 2 || original[1].Type != wfv1.ConditionTypePodRunning {
		t.Errorf("the conditions cleared were the status's own: %v", original)
	}
}

// baselineRun is a succeeded earlier run named name: 100 s long, its node "<name>.a" 40 s and
// "<name>.b" still without an end.
func baselineRun(name string) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: at(0), FinishedAt: at(100), Nodes: wfv1.Nodes{}}}
	a := wfv1.NodeStatus{ID: wf.NodeID(name + ".a"), Name: name + ".a", StartedAt: at(10), FinishedAt: at(50)}
	b := wfv1.NodeStatus{ID: wf.NodeID(name + ".b"), Name: name + ".b", StartedAt: at(10)}
	wf.Status.Nodes[a.ID], wf.Status.Nodes[b.ID] = a, b
	return wf
}

func TestEstimatesAreTheNewestSucceededRunsDurations(t *testing.T) {
	labelled := func(labels map[string]string) *wfv1.Workflow {
		return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf-new", Namespace: "ns", UID: "uid-new", Labels: labels}}
	}
	tests := []struct {
		sentence     string
		wf           *wfv1.Workflow
		runs         map[string]*wfv1.Workflow // by "label=value"
		findErr      error
		wantWorkflow wfv1.EstimatedDuration
		wantNodes    map[string]wfv1.EstimatedDuration
	}{
		{"a workflow of a WorkflowTemplate is estimated from that template's newest succeeded run, node by node name",
			labelled(map[string]string{common.LabelKeyWorkflowTemplate: "tmpl"}),
			map[string]*wfv1.Workflow{common.LabelKeyWorkflowTemplate + "=tmpl": baselineRun("wf-old")},
			nil, 100, map[string]wfv1.EstimatedDuration{"wf-new.a": 40, "wf-new.b": 0, "wf-new.c": 0}},
		{"a workflow of a CronWorkflow is estimated from the cron's runs",
			labelled(map[string]string{common.LabelKeyCronWorkflow: "nightly"}),
			map[string]*wfv1.Workflow{common.LabelKeyCronWorkflow + "=nightly": baselineRun("nightly-1")},
			nil, 100, map[string]wfv1.EstimatedDuration{"wf-new.a": 40}},
		{"the template's label is asked before the cron's, and a template without runs estimates nothing, as argo stops at the first label found",
			labelled(map[string]string{common.LabelKeyWorkflowTemplate: "tmpl", common.LabelKeyCronWorkflow: "nightly"}),
			map[string]*wfv1.Workflow{common.LabelKeyCronWorkflow + "=nightly": baselineRun("nightly-1")},
			nil, 0, map[string]wfv1.EstimatedDuration{"wf-new.a": 0}},
		{"a workflow of no template or cron is estimated at 0",
			labelled(nil), map[string]*wfv1.Workflow{common.LabelKeyWorkflowTemplate + "=tmpl": baselineRun("wf-old")},
			nil, 0, map[string]wfv1.EstimatedDuration{"wf-new.a": 0}},
		{"a look-up that fails estimates nothing",
			labelled(map[string]string{common.LabelKeyWorkflowTemplate: "tmpl"}), nil, errors.New("cache gone"),
			0, map[string]wfv1.EstimatedDuration{"wf-new.a": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			finds := 0
			s := NewEstimates(func(namespace, key, value string) (*wfv1.Workflow, error) {
				finds++
				if namespace != "ns" {
					t.Errorf("looked in namespace %q", namespace)
				}
				return tt.runs[key+"="+value], tt.findErr
			})
			e := s.For(tt.wf)
			if got := e.Workflow(); got != tt.wantWorkflow {
				t.Errorf("workflow estimate = %d, want %d", got, tt.wantWorkflow)
			}
			for name, want := range tt.wantNodes {
				if got := e.Node(name); got != want {
					t.Errorf("estimate of node %s = %d, want %d", name, got, want)
				}
			}
			if again := s.For(tt.wf); again != e || finds > 1 {
				t.Errorf("the estimate was computed again (%d look-ups)", finds)
			}
		})
	}
}

func TestAForgottenEstimateIsComputedAgainAndNoneIsNil(t *testing.T) {
	finds := 0
	s := NewEstimates(func(string, string, string) (*wfv1.Workflow, error) { finds++; return baselineRun("wf-old"), nil })
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf-new", UID: "u", Labels: map[string]string{common.LabelKeyWorkflowTemplate: "t"}}}
	s.For(wf)
	s.Forget(wf.UID)
	if s.Len() != 0 {
		t.Errorf("%d estimates kept after Forget", s.Len())
	}
	s.For(wf)
	if finds != 2 {
		t.Errorf("%d look-ups, want 2 (one before and one after Forget)", finds)
	}
	var none *Estimates
	if e := none.For(wf); e.Workflow() != 0 || e.Node("wf-new.a") != 0 {
		t.Errorf("no estimator estimated something")
	}
	none.Forget(wf.UID)
}
