package podfinalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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

// Releasable returns the pods (by node ID) whose finalizer may go now, given the workflow as persisted:
// the pod carries the finalizer and its node is fulfilled (terminal and result synced), or the workflow
// is complete (nothing more will be captured from any pod).
func Releasable(persisted *wfv1.Workflow, pods map[string]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for nodeID, pod := range pods {
		if !slices.Contains(pod.Finalizers, Finalizer) {
			continue
		}
		node, ok := persisted.Status.Nodes[nodeID]
		if persisted.Status.Phase.Completed() || (ok && node.Fulfilled()) {
			out = append(out, pod)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

// RemoveFinalizer removes the finalizer with a JSON patch that tests the pod's UID and the finalizer's
// position, so status writes by the kubelet since the pod was read do not conflict while another party's
// finalizer change still does; on any failure the pod is re-read and the removal retried. A pod that is
// gone, was replaced or no longer carries the finalizer is done. It returns the resourceVersion the removal
// produced ("" when nothing was removed). The controller and wfguard doctor both remove it so.
func RemoveFinalizer(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) (string, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		i := slices.Index(pod.Finalizers, Finalizer)
		if i < 0 {
			return "", nil
		}
		at := fmt.Sprintf("/metadata/finalizers/%d", i)
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/uid", "value": pod.UID},
			{"op": "test", "path": at, "value": Finalizer},
			{"op": "remove", "path": at},
		})
		if err != nil {
			return "", err
		}
		updated, err := kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return updated.ResourceVersion, nil
		case apierrors.IsNotFound(err):
			return "", nil
		}
		lastErr = err
		fresh, gerr := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return "", nil
		}
		if gerr != nil {
			return "", fmt.Errorf("removing status finalizer from pod %s/%s: %w (and re-reading it: %v)", pod.Namespace, pod.Name, err, gerr)
		}
		if fresh.UID != pod.UID {
			return "", nil // a new pod of the same name: not the one whose capture was persisted
		}
		if slices.Index(fresh.Finalizers, Finalizer) == i {
			// The tests held, so the patch failed for another reason (forbidden, throttled, ...).
			return "", fmt.Errorf("removing status finalizer from pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		pod = fresh
	}
	return "", fmt.Errorf("removing status finalizer from pod %s/%s: its finalizers kept changing after 5 attempts: %w", pod.Namespace, pod.Name, lastErr)
}
