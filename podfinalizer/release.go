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

// Releaser removes the status finalizer from pods.
type Releaser struct {
	Kube kubernetes.Interface
}

// Release removes the finalizer with a merge patch guarded by the pod's resourceVersion, re-reading the
// pod on conflict; a pod that is gone or no longer carries it is done. It returns the resourceVersion the
// removal produced ("" when nothing was removed).
func (r *Releaser) Release(ctx context.Context, pod *corev1.Pod) (string, error) {
	for attempt := 0; attempt < 5; attempt++ {
		if !slices.Contains(pod.Finalizers, Finalizer) {
			return "", nil
		}
		remaining := slices.DeleteFunc(slices.Clone(pod.Finalizers), func(f string) bool { return f == Finalizer })
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": remaining, "resourceVersion": pod.ResourceVersion, "uid": pod.UID}})
		if err != nil {
			return "", err
		}
		updated, err := r.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return updated.ResourceVersion, nil
		case apierrors.IsNotFound(err):
			return "", nil
		case !apierrors.IsConflict(err):
			return "", fmt.Errorf("removing status finalizer from pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		fresh, err := r.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("re-reading pod %s/%s to release its finalizer: %w", pod.Namespace, pod.Name, err)
		}
		if fresh.UID != pod.UID {
			return "", nil // a new pod of the same name: not the one whose capture was persisted
		}
		pod = fresh
	}
	return "", fmt.Errorf("removing status finalizer from pod %s/%s: still conflicting after 5 attempts", pod.Namespace, pod.Name)
}
