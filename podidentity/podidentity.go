package podidentity

import (
	"fmt"
	"hash/fnv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Owner is the workflow a pod claims: its namespace, name and UID.
type Owner struct {
	Namespace string
	Name      string
	UID       types.UID
}

// OwnerOf is the Owner of a workflow.
func OwnerOf(wf *wfv1.Workflow) Owner {
	return Owner{Namespace: wf.Namespace, Name: wf.Name, UID: wf.UID}
}

// ClaimedOwner is the workflow a pod's own ownerReference names, in the pod's namespace (ok false when
// no Workflow owns it). The orphan path uses it: the workflow is gone, only the pod's claim is left.
func ClaimedOwner(pod *corev1.Pod) (Owner, bool) {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == workflowKind && ref.UID != "" {
			return Owner{Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}, true
		}
	}
	return Owner{}, false
}

const workflowKind = "Workflow"

// Mismatch says why a pod is not the controller's pod for a node ("" when it is). The values are metric
// label values.
type Mismatch string

// Mismatches.
const (
	Match           Mismatch = ""
	OtherNamespace  Mismatch = "other_namespace"
	OtherOwner      Mismatch = "other_owner"
	OtherWorkflow   Mismatch = "other_workflow_label"
	NoNodeID        Mismatch = "no_node_id"
	OtherNode       Mismatch = "other_node"
	UnexpectedName  Mismatch = "unexpected_name"
	maxPodNameStem           = 253 - 10 - 1 // argo cuts "<workflow>-<template>" to this before "-<hash>"
	nodeIDHashDigit          = "0123456789"
)

// Check reports whether pod is the pod the controller created for node of the workflow owner: same
// namespace, a Workflow ownerReference with the owner's UID and name, the owner's workflow label, the
// node's ID in the node-id annotation, and the name argo derives for that node (<workflow>-<template>-
// <fnv32a(node name)>, or the workflow's name for a one-pod workflow). node may be nil when the workflow's
// status does not record the node yet (or the workflow is gone): the name must then agree with the node
// ID the pod claims, which argo derives from the same hash (<workflow>-<fnv32a(node name)>).
func Check(owner Owner, node *wfv1.NodeStatus, pod *corev1.Pod) Mismatch {
	if pod.Namespace != owner.Namespace {
		return OtherNamespace
	}
	if !ownedBy(pod, owner) {
		return OtherOwner
	}
	if pod.Labels[common.LabelKeyWorkflow] != owner.Name {
		return OtherWorkflow
	}
	id := pod.Annotations[common.AnnotationKeyNodeID]
	if id == "" {
		return NoNodeID
	}
	if node != nil && id != node.ID {
		return OtherNode
	}
	var hash string
	switch {
	case node != nil && node.Name == owner.Name:
		hash = ""
	case node != nil:
		hash = fnv32a(node.Name)
	default:
		h, ok := hashOfNodeID(owner.Name, id)
		if !ok {
			return UnexpectedName
		}
		hash = h
	}
	if !NameFits(owner.Name, hash, pod.Name) {
		return UnexpectedName
	}
	return Match
}

// hashOfNodeID is the node-name hash argo puts in a node ID of workflowName ("" for the node named after
// the workflow); ok is false for an ID argo would not give.
func hashOfNodeID(workflowName, id string) (string, bool) {
	if id == workflowName {
		return "", true
	}
	h, ok := strings.CutPrefix(id, workflowName+"-")
	if !ok || h == "" || strings.Trim(h, nodeIDHashDigit) != "" {
		return "", false
	}
	return h, true
}

// LostItsOwner reports whether pod looks like a controller's pod whose Workflow ownerReference was removed
// (its workflow deleted with orphan propagation): no Workflow owner, and its workflow label, node-id
// annotation and name agree. Such a pod can decide no node (nothing matches it); only its finalizer is left.
func LostItsOwner(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == workflowKind {
			return false
		}
	}
	name, id := pod.Labels[common.LabelKeyWorkflow], pod.Annotations[common.AnnotationKeyNodeID]
	if name == "" || id == "" {
		return false
	}
	hash, ok := hashOfNodeID(name, id)
	return ok && NameFits(name, hash, pod.Name)
}

// NameFits reports whether podName is a name argo gives a pod of workflowName whose node name hashes to
// hash (fnv32a, decimal; "" for the node named after the workflow, whose pod is named after it too).
func NameFits(workflowName, hash, podName string) bool {
	if hash == "" {
		return podName == workflowName
	}
	stem, ok := strings.CutSuffix(podName, "-"+hash)
	if !ok {
		return false
	}
	if stem == workflowName || strings.HasPrefix(stem, workflowName+"-") {
		return true
	}
	// A long "<workflow>-<template>" is cut to maxPodNameStem characters, possibly inside the workflow name.
	return len(stem) == maxPodNameStem && strings.HasPrefix(workflowName, stem)
}

func ownedBy(pod *corev1.Pod, owner Owner) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == workflowKind && ref.UID == owner.UID && ref.Name == owner.Name {
			return true
		}
	}
	return false
}

func fnv32a(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s)) // hash.Hash.Write never returns an error
	return fmt.Sprint(h.Sum32())
}
