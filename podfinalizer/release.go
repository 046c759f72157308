package podfinalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Finalizer is argo's pod status finalizer: a pod cannot vanish before the controller captured its status.
const Finalizer = common.FinalizerPodStatus

// LabelCompleted is argo's pod label: "true" once the controller no longer needs to watch the pod. The
// controller's pod cache selects only pods not labelled "true", so its memory follows running work.
const LabelCompleted = common.LabelKeyCompleted

// Settlement is what the controller does to one pod whose node's final state is persisted: remove the
// status finalizer (Release), label it completed (Complete), or both in one patch.
type Settlement struct {
	Pod      *corev1.Pod
	Release  bool
	Complete bool
}

// IsCompleted reports whether pod is labelled completed: it has left (or is leaving) the pod cache.
func IsCompleted(pod *corev1.Pod) bool { return pod.Labels[LabelCompleted] == "true" }

// Settleable returns what to do to each pod (by node ID), given the workflow as persisted, sorted by pod
// name. A pod's finalizer goes once its node is fulfilled (terminal and result synced; a daemoned node
// counts, its pod runs on) or the workflow is complete. A pod is labelled completed once its node is final
// (terminal and synced: a running daemon's pod stays watched) or the workflow is complete: nothing more
// will be captured from it.
func Settleable(persisted *wfv1.Workflow, pods map[string]*corev1.Pod) []Settlement {
	var out []Settlement
	done := persisted.Status.Phase.Completed()
	for nodeID, pod := range pods {
		node, ok := persisted.Status.Nodes[nodeID]
		s := Settlement{
			Pod:      pod,
			Release:  slices.Contains(pod.Finalizers, Finalizer) && (done || (ok && node.Fulfilled())),
			Complete: !IsCompleted(pod) && (done || (ok && Final(node))),
		}
		if s.Release || s.Complete {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Settlement) int { return strings.Compare(a.Pod.Name, b.Pod.Name) })
	return out
}

// Final reports whether a node will never change again: terminal (or skipped) with its result synced.
// Unlike NodeStatus.Fulfilled, a daemoned node still running is not final.
func Final(n wfv1.NodeStatus) bool {
	return n.Phase.Fulfilled(n.TaskResultSynced) && (n.TaskResultSynced == nil || *n.TaskResultSynced)
}

// Releasable returns the pods whose status finalizer may go now (Settleable's releases).
func Releasable(persisted *wfv1.Workflow, pods map[string]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range Settleable(persisted, pods) {
		if s.Release {
			out = append(out, s.Pod)
		}
	}
	return out
}

// RemoveFinalizer removes the status finalizer only (Settle without the completed label). It returns the
// resourceVersion the removal produced ("" when nothing was removed). wfguard doctor removes it so.
func RemoveFinalizer(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) (string, error) {
	updated, err := Settle(ctx, kube, Settlement{Pod: pod, Release: true})
	if updated == nil {
		return "", err
	}
	return updated.ResourceVersion, err
}

// Settle applies s with one JSON patch that tests the pod's UID and, when releasing, the finalizer's
// position: status writes by the kubelet since the pod was read do not conflict, while another party's
// finalizer change still does; on any failure the pod is re-read and the patch retried. A pod that is
// gone or was replaced, or that needs nothing any more, is done. It returns the patched pod (nil when
// nothing was patched).
func Settle(ctx context.Context, kube kubernetes.Interface, s Settlement) (*corev1.Pod, error) {
	pod := s.Pod
	key := pod.Namespace + "/" + pod.Name
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		patch, i, err := settlePatch(pod, s)
		if err != nil || patch == nil {
			return nil, err
		}
		updated, err := kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return updated, nil
		case apierrors.IsNotFound(err):
			return nil, nil
		}
		lastErr = err
		fresh, gerr := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return nil, nil
		}
		if gerr != nil {
			return nil, fmt.Errorf("settling pod %s (releasing %s: %v, labelling completed: %v): %w (and re-reading it: %v)", key, Finalizer, s.Release, s.Complete, err, gerr)
		}
		if fresh.UID != pod.UID {
			return nil, nil // a new pod of the same name: not the one whose capture was persisted
		}
		if slices.Index(fresh.Finalizers, Finalizer) == i {
			// The tests held, so the patch failed for another reason (forbidden, throttled, ...).
			return nil, fmt.Errorf("settling pod %s (releasing %s: %v, labelling completed: %v): %w", key, Finalizer, s.Release, s.Complete, err)
		}
		pod = fresh
	}
	return nil, fmt.Errorf("settling pod %s: its finalizers kept changing after 5 attempts: %w", key, lastErr)
}

// settlePatch is the JSON patch settling pod as s asks, and the finalizer index it tests (-1: none); nil
// when the pod needs nothing.
func settlePatch(pod *corev1.Pod, s Settlement) ([]byte, int, error) {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": pod.UID}}
	i := -1
	if s.Release {
		if i = slices.Index(pod.Finalizers, Finalizer); i >= 0 {
			at := fmt.Sprintf("/metadata/finalizers/%d", i)
			ops = append(ops, map[string]any{"op": "test", "path": at, "value": Finalizer}, map[string]any{"op": "remove", "path": at})
		}
	}
	if s.Complete && !IsCompleted(pod) {
		if pod.Labels == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{LabelCompleted: "true"}})
		} else {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + jsonPointerEscape(LabelCompleted), "value": "true"})
		}
	}
	if len(ops) == 1 {
		return nil, -1, nil
	}
	patch, err := json.Marshal(ops)
	return patch, i, err
}

// jsonPointerEscape escapes a map key for a JSON pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
