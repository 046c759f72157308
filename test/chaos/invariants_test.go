package chaos

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podfinalizer"
)

// The checker must catch each violation it claims to check, or a green chaos run proves nothing.
func TestTheCheckerCatchesEachBrokenInvariant(t *testing.T) {
	const uid = "w-uid"
	wfAt := func(rvn string, ext extstatus.Extensions, nodes ...wfv1.NodeStatus) *unstructured.Unstructured {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uid, ResourceVersion: rvn}, Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{}}}
		for _, n := range nodes {
			wf.Status.Nodes[n.ID] = n
		}
		u, err := extstatus.ToUnstructured(wf, ext)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	node := func(id, name string, phase wfv1.NodePhase) wfv1.NodeStatus {
		return wfv1.NodeStatus{ID: id, Name: name, Type: wfv1.NodeTypePod, Phase: phase}
	}
	result := func(rvn, id string, complete bool) *wfv1.WorkflowTaskResult {
		return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: id, ResourceVersion: rvn,
			Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: map[bool]string{true: "true", false: "false"}[complete]},
			OwnerReferences: []metav1.OwnerReference{{UID: uid}}}}
	}
	pod := func(rvn, name, nodeName, id string, phase corev1.PodPhase, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("p-" + name), ResourceVersion: rvn, Finalizers: finalizers,
			Labels:      map[string]string{podspec.LabelWorkflowUID: uid, common.LabelKeyWorkflow: "w"},
			Annotations: map[string]string{common.AnnotationKeyNodeName: nodeName, common.AnnotationKeyNodeID: id}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	action := func(rvn, name string, phase v1alpha1.ActionPhase) *v1alpha1.WorkflowAction {
		return &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rvn}, Status: v1alpha1.WorkflowActionStatus{Phase: phase}}
	}
	failedWith := func(rvn, name, reason string) *v1alpha1.WorkflowAction {
		a := action(rvn, name, v1alpha1.PhaseFailed)
		a.Status.Reason = reason
		return a
	}
	stopRecorded := extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyStop, AppliedActions: []extstatus.AppliedAction{{UID: "a1", Name: "stop-1", Outcome: "Succeeded"}}}
	deps := plan{deps: map[string]map[string][]string{"w": {"w.b": {"w.a"}}}, actionKinds: map[string]string{}}
	// A retried workflow: completed Failed at rv 4, reopened by retry-1 at rv 6 (its nodes run again).
	wfIn := func(rvn string, phase wfv1.WorkflowPhase, ext extstatus.Extensions, nodes ...wfv1.NodeStatus) *unstructured.Unstructured {
		u := wfAt(rvn, ext, nodes...)
		if err := unstructured.SetNestedField(u.Object, string(phase), "status", "phase"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	since := metav1.Now()
	retryRecord := []extstatus.AppliedAction{{UID: "r1", Name: "retry-1", Outcome: "Succeeded"}}
	retriedExt := extstatus.Extensions{AppliedActions: retryRecord, RetryCleanupSince: &since}
	retryPlan := plan{deps: deps.deps, actionKinds: map[string]string{"retry-1": v1alpha1.ActionRetry}}
	retryDone := action("9", "retry-1", v1alpha1.PhaseSucceeded)
	// Two Retries sent to a failed workflow in one second: the controller orders them by name.
	retryAt := func(name string, phase v1alpha1.ActionPhase, reason string) *v1alpha1.WorkflowAction {
		a := action("9", name, phase)
		a.Spec = v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: "w", UID: uid}, Action: v1alpha1.ActionRetry}
		a.Status.Reason = reason
		return a
	}
	twoRetries := plan{actionKinds: map[string]string{"retry-1": v1alpha1.ActionRetry, "retry-2": v1alpha1.ActionRetry},
		retryTargets: map[string]types.UID{"retry-1": uid, "retry-2": uid}}
	rerun := func(p *corev1.Pod, podUID string) *corev1.Pod { p.UID = types.UID(podUID); return p }
	resultOf := func(rvn, id, objUID string) *wfv1.WorkflowTaskResult {
		r := result(rvn, id, true)
		r.UID = types.UID(objUID)
		return r
	}
	cases := []struct {
		sentence string
		h        history
		p        plan
		final    []*unstructured.Unstructured
		want     string // the invariant expected; "" = clean
	}{
		{"a node that succeeds after its complete result is clean",
			history{results: []*wfv1.WorkflowTaskResult{result("5", "a", true)}, workflows: []*unstructured.Unstructured{wfAt("6", extstatus.Extensions{}, node("a", "w.a", wfv1.NodeSucceeded))}},
			deps, nil, ""},
		{"a node that succeeds before its result completes breaks I1",
			history{results: []*wfv1.WorkflowTaskResult{result("5", "a", false), result("9", "a", true)}, workflows: []*unstructured.Unstructured{wfAt("6", extstatus.Extensions{}, node("a", "w.a", wfv1.NodeSucceeded))}},
			deps, nil, "I1"},
		{"a successor pod created before its dependency's result completed breaks I2",
			history{pods: []*corev1.Pod{pod("3", "pa", "w.a", "a", corev1.PodPending), pod("6", "pa", "w.a", "a", corev1.PodSucceeded), pod("7", "pb", "w.b", "b", corev1.PodPending)},
				results: []*wfv1.WorkflowTaskResult{result("8", "a", true)}},
			deps, nil, "I2"},
		{"an action that never finishes breaks I3",
			history{actions: []*v1alpha1.WorkflowAction{action("3", "stop-1", v1alpha1.PhasePending)}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, "I3"},
		{"a terminal action that changes phase breaks I3",
			history{actions: []*v1alpha1.WorkflowAction{action("3", "stop-1", v1alpha1.PhaseSucceeded), action("4", "stop-1", v1alpha1.PhaseFailed)}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, "I3"},
		{"a Stop whose workflow was deleted, with its record, before any outcome, and failed WorkflowNotFound, is clean",
			history{workflows: []*unstructured.Unstructured{wfAt("4", stopRecorded)},
				actions: []*v1alpha1.WorkflowAction{failedWith("6", "stop-1", actions.ReasonWorkflowNotFound)}, deleted: map[string]int64{uid: 5}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, ""},
		{"a Stop failed WorkflowNotFound while its recording workflow still existed breaks I3",
			history{workflows: []*unstructured.Unstructured{wfAt("4", stopRecorded)},
				actions: []*v1alpha1.WorkflowAction{failedWith("6", "stop-1", actions.ReasonWorkflowNotFound)}, deleted: map[string]int64{uid: 7}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, "I3"},
		{"a Stop whose workflow was deleted, failed for another reason than WorkflowNotFound, breaks I3",
			history{workflows: []*unstructured.Unstructured{wfAt("4", stopRecorded)},
				actions: []*v1alpha1.WorkflowAction{failedWith("6", "stop-1", actions.ReasonWorkflowCompleted)}, deleted: map[string]int64{uid: 5}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, "I3"},
		{"a Stop recorded without its shutdown in the same write breaks I4",
			history{workflows: []*unstructured.Unstructured{wfAt("4", extstatus.Extensions{AppliedActions: []extstatus.AppliedAction{{UID: "a1", Name: "stop-1", Outcome: "Succeeded"}}})},
				actions: []*v1alpha1.WorkflowAction{action("5", "stop-1", v1alpha1.PhaseSucceeded)}},
			plan{actionKinds: map[string]string{"stop-1": v1alpha1.ActionStop}}, nil, "I4"},
		{"a finalizer released before the node's final state was stored breaks I5",
			history{pods: []*corev1.Pod{pod("3", "pa", "w.a", "a", corev1.PodSucceeded, podfinalizer.Finalizer), pod("5", "pa", "w.a", "a", corev1.PodSucceeded)},
				workflows: []*unstructured.Unstructured{wfAt("4", extstatus.Extensions{}, node("a", "w.a", wfv1.NodeRunning)), wfAt("6", extstatus.Extensions{}, node("a", "w.a", wfv1.NodeSucceeded))},
				results:   []*wfv1.WorkflowTaskResult{result("2", "a", true)}},
			deps, nil, "I5"},
		{"a Retry recorded in the write that puts the Failed workflow back to Pending with its cleanup open is clean",
			history{workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
				wfIn("6", wfv1.WorkflowPending, retriedExt)}, actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, ""},
		{"a Retry recorded while the workflow stays Failed breaks I4",
			history{workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
				wfIn("6", wfv1.WorkflowFailed, extstatus.Extensions{AppliedActions: retryRecord}, node("a", "w.a", wfv1.NodeFailed))}, actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, "I4"},
		{"a workflow reopened a second time under the same Retry's record breaks I3",
			history{workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
				wfIn("6", wfv1.WorkflowPending, retriedExt), wfIn("7", wfv1.WorkflowFailed, retriedExt, node("a", "w.a", wfv1.NodeFailed)),
				wfIn("8", wfv1.WorkflowPending, retriedExt)}, actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, "I3"},
		{"a Retry reported Failed whose record says it was applied breaks I3",
			history{workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
				wfIn("6", wfv1.WorkflowPending, retriedExt)}, actions: []*v1alpha1.WorkflowAction{action("9", "retry-1", v1alpha1.PhaseFailed)}},
			retryPlan, nil, "I3"},
		{"a retried node Succeeded on the previous run's result breaks I1",
			history{results: []*wfv1.WorkflowTaskResult{resultOf("3", "a", "r-old")},
				workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
					wfIn("6", wfv1.WorkflowPending, retriedExt), wfIn("8", wfv1.WorkflowRunning, extstatus.Extensions{AppliedActions: retryRecord}, node("a", "w.a", wfv1.NodeSucceeded))},
				actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, "I1"},
		{"a retried node Succeeded on its new run's result is clean",
			history{results: []*wfv1.WorkflowTaskResult{resultOf("3", "a", "r-old"), resultOf("7", "a", "r-new")},
				workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
					wfIn("6", wfv1.WorkflowPending, retriedExt), wfIn("8", wfv1.WorkflowRunning, extstatus.Extensions{AppliedActions: retryRecord}, node("a", "w.a", wfv1.NodeSucceeded))},
				actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, ""},
		{"a successor's new pod created on its removed dependency's previous success breaks I2",
			history{pods: []*corev1.Pod{pod("2", "pa", "w.a", "a", corev1.PodSucceeded), pod("3", "pb", "w.b", "b", corev1.PodFailed),
				rerun(pod("8", "pb", "w.b", "b", corev1.PodPending), "p-pb-2")},
				results: []*wfv1.WorkflowTaskResult{resultOf("2", "a", "r-a")},
				workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeSucceeded), node("b", "w.b", wfv1.NodeFailed)),
					wfIn("6", wfv1.WorkflowPending, retriedExt)}, actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, "I2"},
		{"a retried node's new pod released on the previous run's completion breaks I5",
			history{pods: []*corev1.Pod{rerun(pod("7", "pa", "w.a", "a", corev1.PodSucceeded, podfinalizer.Finalizer), "p-pa-2"), rerun(pod("9", "pa", "w.a", "a", corev1.PodSucceeded), "p-pa-2")},
				results: []*wfv1.WorkflowTaskResult{resultOf("7", "a", "r-new")},
				workflows: []*unstructured.Unstructured{wfIn("4", wfv1.WorkflowFailed, extstatus.Extensions{}, node("a", "w.a", wfv1.NodeFailed)),
					wfIn("6", wfv1.WorkflowPending, retriedExt), wfIn("8", wfv1.WorkflowRunning, extstatus.Extensions{AppliedActions: retryRecord}, node("a", "w.a", wfv1.NodeRunning))},
				actions: []*v1alpha1.WorkflowAction{retryDone}},
			retryPlan, nil, "I5"},
		{"a second Retry sent to a failed workflow that meets the first one's new run is clean",
			history{actions: []*v1alpha1.WorkflowAction{retryAt("retry-1", v1alpha1.PhaseSucceeded, "Applied"), retryAt("retry-2", v1alpha1.PhaseFailed, "WorkflowNotCompleted")}},
			twoRetries, nil, ""},
		{"a Retry sent to a failed workflow refused with no Retry applied before it breaks I3",
			history{actions: []*v1alpha1.WorkflowAction{retryAt("retry-1", v1alpha1.PhaseFailed, "WorkflowNotCompleted"), retryAt("retry-2", v1alpha1.PhaseSucceeded, "Applied")}},
			twoRetries, nil, "I3"},
		{"status written by another field manager breaks I7",
			history{}, deps, []*unstructured.Unstructured{func() *unstructured.Unstructured {
				u := wfAt("9", extstatus.Extensions{})
				u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{}}}`)}}})
				return u
			}()}, "I7"},
		{"a pod whose argument still reads {{steps.a.outputs.parameters.out}} breaks I8",
			history{pods: []*corev1.Pod{func() *corev1.Pod {
				p := pod("3", "pb", "w.b", "b", corev1.PodPending)
				p.Spec.Containers = []corev1.Container{{Name: "main", Args: []string{"echo", "{{steps.a.outputs.parameters.out}}"}}}
				return p
			}()}}, plan{}, nil, "I8"},
		{"a pod whose ARGO_TEMPLATE still reads {{tasks.a.outputs.result}} breaks I8",
			history{pods: []*corev1.Pod{func() *corev1.Pod {
				p := pod("3", "pb", "w.b", "b", corev1.PodPending)
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: common.EnvVarTemplate, Value: `{"name":"b","inputs":{"parameters":[{"name":"x","value":"{{tasks.a.outputs.result}}"}]}}`}}}}
				return p
			}()}}, plan{}, nil, "I8"},
		{"a pod whose arguments were all resolved is clean",
			history{pods: []*corev1.Pod{func() *corev1.Pod {
				p := pod("3", "pb", "w.b", "b", corev1.PodPending)
				p.Spec.Containers = []corev1.Container{{Name: "main", Args: []string{"echo", "hello"}, Env: []corev1.EnvVar{{Name: "X", Value: "{{ .Values.outputs }}"}}}}
				return p
			}()}}, plan{}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			if tc.h.deleted == nil {
				tc.h.deleted = map[string]int64{}
			}
			got := check(tc.h, tc.p, tc.final)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no violation, got %v", got)
				}
				return
			}
			for _, v := range got {
				if v.Invariant == tc.want {
					return
				}
			}
			var s []string
			for _, v := range got {
				s = append(s, v.String())
			}
			t.Fatalf("want a %s violation, got [%s]", tc.want, strings.Join(s, "; "))
		})
	}
}
