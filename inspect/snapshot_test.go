package inspect_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wfguard/wfguard/inspect"
)

// A snapshot is a workflow and what surrounds it; only the workflow itself must be read.
func TestASnapshotReadsAWorkflowWithWhatSurroundsItAndListsWhatItSkipped(t *testing.T) {
	labels := workflowLabel("wf")
	objects := []runtime.Object{storedWorkflow("wf"), action("act", "wf"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod", Labels: labels}},
		&wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "result", Labels: labels}}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))
	for _, tc := range []struct {
		sentence string
		name     string
		refuse   func(*api)
		want     string
	}{
		{sentence: "a workflow is read with its pods, task results and actions", name: "wf",
			want: "wf: 1 pods, 1 results, 1 actions, skipped []"},
		{sentence: "reads around it that fail are listed as skipped and the rest kept", name: "wf",
			refuse: func(a *api) {
				a.refuse(a.kube, "list", "pods", forbidden)
				a.refuse(a.dynamic, "list", "workflowactions", forbidden)
			},
			want: "wf: 0 pods, 1 results, 0 actions, skipped [cannot list pods in namespace ns: forbidden cannot list workflowactions in namespace ns: forbidden]"},
		{sentence: "a workflow that cannot be read is an error, and no snapshot", name: "missing", want: "workflow ns/missing not found"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := newAPI(t, objects...)
			if tc.refuse != nil {
				tc.refuse(a)
			}
			s, err := inspect.ReadSnapshot(t.Context(), a.clients, "ns", tc.name)
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprintf("%s: %d pods, %d results, %d actions, skipped %v", s.Workflow.WF.Name, len(s.Pods), len(s.Results), len(s.Actions), s.Skipped)
			} else if s != nil {
				got += " (with a snapshot)"
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWhatThePodHelpersReadOffAPod(t *testing.T) {
	owned := metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "wf", UID: "wf-uid"}
	ended := func(at time.Time) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}
	}
	for _, tc := range []struct {
		sentence string
		pod      corev1.Pod
		want     string // "owner node finalizer end"
	}{
		{"a bare pod has no owner, is its own node, holds nothing and has not ended",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, "- p false 0001-01-01T00:00:00Z"},
		{"a workflow's pod names its owner and its node, and ended with its last container",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", UID: "rs"}, owned},
				Annotations: map[string]string{common.AnnotationKeyNodeID: "wf-123"}, Finalizers: []string{"other", common.FinalizerPodStatus}},
				Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{ended(t0.Add(-time.Minute))},
					ContainerStatuses: []corev1.ContainerStatus{ended(t0), ended(t0.Add(-time.Second)), {}}}},
			"wf-uid wf-123 true 2026-12-08T12:00:00Z"},
		{"a pod with no container ended ended when it stopped being ready",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
				{Type: corev1.PodReady, LastTransitionTime: metav1.NewTime(t0)}}}},
			"- p false 2026-12-08T12:00:00Z"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			owner := inspect.OwnerUID(&tc.pod)
			if owner == "" {
				owner = "-"
			}
			got := fmt.Sprintf("%s %s %v %s", owner, inspect.NodeID(&tc.pod), inspect.HoldsFinalizer(&tc.pod), inspect.PodEnd(&tc.pod).UTC().Format(time.RFC3339))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
