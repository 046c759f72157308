package podidentity_test

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podidentity"
)

func TestCheck(t *testing.T) {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wf", UID: "uid-1"}}
	nodeName := "wf[0].s1"
	node := &wfv1.NodeStatus{ID: wf.NodeID(nodeName), Name: nodeName, TemplateName: "main", Type: wfv1.NodeTypePod}
	other := &wfv1.NodeStatus{ID: wf.NodeID("wf[1].s2"), Name: "wf[1].s2", TemplateName: "main", Type: wfv1.NodeTypePod}
	root := &wfv1.NodeStatus{ID: wf.NodeID("wf"), Name: "wf", TemplateName: "main", Type: wfv1.NodeTypePod}
	// pod is the pod the controller creates for n, changed by edit.
	pod := func(n *wfv1.NodeStatus, edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       "a",
			Name:            podspec.PodName(wf.Name, n.Name, n.TemplateName, n.ID),
			Labels:          map[string]string{common.LabelKeyWorkflow: "wf"},
			Annotations:     map[string]string{common.AnnotationKeyNodeID: n.ID},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: "uid-1"}},
		}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	long := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: strings.Repeat("w", 250), UID: "uid-1"}}
	longNode := &wfv1.NodeStatus{ID: long.NodeID("x"), Name: "x", TemplateName: "main"}
	longPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "a", Name: podspec.PodName(long.Name, "x", "main", longNode.ID),
		Labels:          map[string]string{common.LabelKeyWorkflow: long.Name},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: longNode.ID},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: long.Name, UID: "uid-1"}},
	}}
	for _, tc := range []struct {
		sentence string
		owner    podidentity.Owner
		node     *wfv1.NodeStatus
		pod      *corev1.Pod
		want     podidentity.Mismatch
	}{
		{"the pod the controller created for the node matches", podidentity.OwnerOf(wf), node, pod(node, nil), podidentity.Match},
		{"the pod of a one-pod workflow is named after the workflow", podidentity.OwnerOf(wf), root, pod(root, nil), podidentity.Match},
		{"a pod whose node is not recorded yet matches by the hash its node ID and name share", podidentity.OwnerOf(wf), nil, pod(node, nil), podidentity.Match},
		{"a pod of a workflow whose name is cut in the pod name matches", podidentity.OwnerOf(long), longNode, longPod, podidentity.Match},
		{"a pod in another namespace does not match, whatever it claims", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.Namespace = "b" }), podidentity.OtherNamespace},
		{"a pod owned by another workflow UID does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.OwnerReferences[0].UID = "uid-2" }), podidentity.OtherOwner},
		{"a pod whose owner reference names another workflow does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.OwnerReferences[0].Name = "other" }), podidentity.OtherOwner},
		{"a pod without a Workflow owner does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "ReplicaSet" }), podidentity.OtherOwner},
		{"a pod labelled for another workflow does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.Labels[common.LabelKeyWorkflow] = "other" }), podidentity.OtherWorkflow},
		{"a pod without a node-id annotation does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { delete(p.Annotations, common.AnnotationKeyNodeID) }), podidentity.NoNodeID},
		{"a pod annotated with another node's ID does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.Annotations[common.AnnotationKeyNodeID] = other.ID }), podidentity.OtherNode},
		{"another node's pod re-annotated with this node's ID does not match", podidentity.OwnerOf(wf), node,
			pod(other, func(p *corev1.Pod) { p.Annotations[common.AnnotationKeyNodeID] = node.ID }), podidentity.UnexpectedName},
		{"a pod with a name of its own choosing does not match", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.Name = "evil" }), podidentity.UnexpectedName},
		{"an unrecorded pod whose name and claimed node ID disagree does not match", podidentity.OwnerOf(wf), nil,
			pod(node, func(p *corev1.Pod) { p.Annotations[common.AnnotationKeyNodeID] = other.ID }), podidentity.UnexpectedName},
		{"an unrecorded pod claiming a node ID of another workflow's shape does not match", podidentity.OwnerOf(wf), nil,
			pod(node, func(p *corev1.Pod) { p.Annotations[common.AnnotationKeyNodeID] = "other-123" }), podidentity.UnexpectedName},
		{"a pod named after the workflow cannot claim another node", podidentity.OwnerOf(wf), node,
			pod(node, func(p *corev1.Pod) { p.Name = "wf" }), podidentity.UnexpectedName},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := podidentity.Check(tc.owner, tc.node, tc.pod); got != tc.want {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClaimedOwnerIsThePodsWorkflowInThePodsNamespace(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", OwnerReferences: []metav1.OwnerReference{
		{Kind: "ConfigMap", Name: "x", UID: "u0"}, {Kind: "Workflow", Name: "wf", UID: "u1"}}}}
	got, ok := podidentity.ClaimedOwner(p)
	if want := (podidentity.Owner{Namespace: "b", Name: "wf", UID: "u1"}); !ok || got != want {
		t.Errorf("ClaimedOwner = %+v, %v; want %+v, true", got, ok, want)
	}
	if _, ok := podidentity.ClaimedOwner(&corev1.Pod{}); ok {
		t.Error("a pod without a Workflow owner claims one")
	}
}

func TestAPodWhoseWorkflowWasDeletedWithOrphanPropagationLostItsOwner(t *testing.T) {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wf", UID: "uid-1"}}
	node := &wfv1.NodeStatus{ID: wf.NodeID("wf[0].s1"), Name: "wf[0].s1", TemplateName: "main"}
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:   "a",
			Name:        podspec.PodName(wf.Name, node.Name, node.TemplateName, node.ID),
			Labels:      map[string]string{common.LabelKeyWorkflow: "wf"},
			Annotations: map[string]string{common.AnnotationKeyNodeID: node.ID},
		}}
		edit(p)
		return p
	}
	for _, tc := range []struct {
		sentence string
		pod      *corev1.Pod
		want     bool
	}{
		{"the controller's pod without its ownerReference lost its owner", pod(func(*corev1.Pod) {}), true},
		{"a pod still owned by a workflow did not", pod(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: "uid-1"}}
		}), false},
		{"a pod without the workflow label is not the controller's", pod(func(p *corev1.Pod) { delete(p.Labels, common.LabelKeyWorkflow) }), false},
		{"a pod without a node id is not the controller's", pod(func(p *corev1.Pod) { delete(p.Annotations, common.AnnotationKeyNodeID) }), false},
		{"a pod whose name disagrees with its node id is not the controller's", pod(func(p *corev1.Pod) { p.Name = "wf-main-1" }), false},
		{"a pod whose node id is not of its workflow is not the controller's", pod(func(p *corev1.Pod) { p.Labels[common.LabelKeyWorkflow] = "other" }), false},
	} {
		if got := podidentity.LostItsOwner(tc.pod); got != tc.want {
			t.Errorf("%s: LostItsOwner = %v, want %v", tc.sentence, got, tc.want)
		}
	}
}
