package podfinalizer

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReasonCompletedLabelRestored is the Warning Event on a workflow one of whose pods was labelled completed
// while its node was not final: someone else took the pod out of the controller's pod cache.
const ReasonCompletedLabelRestored = "PodCompletedLabelRestored"

// RestoreWatch sets the completed label of a pod read past the cache back to "false" when someone else set
// it while its node n is not final (the controller labels a pod only once its node's final state is
// persisted): without it the pod's changes would reach no pass and its finalizer no release. It returns the
// pod to assess: the restored copy, or pod as read when it was not labelled or the patch failed (the next
// pass reads it again and retries).
func (r *Releaser) RestoreWatch(ctx context.Context, wf *wfv1.Workflow, n *wfv1.NodeStatus, pod *corev1.Pod) (*corev1.Pod, error) {
	if !IsCompleted(pod) {
		return pod, nil
	}
	// Tests of the UID and the label: a pod replaced since, or labelled back by someone else, is left alone.
	path := "/metadata/labels/" + jsonPointerEscape(LabelCompleted)
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":%q,"value":"true"},{"op":"replace","path":%q,"value":"false"}]`,
		pod.UID, path, path)
	restored, err := r.cfg.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return pod, fmt.Errorf("restoring the completed label of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.metrics.completedRestored.Inc()
	// Recorded now: the pass may have nothing to write, and the restore happened regardless.
	r.cfg.Recorder.Eventf(wf, corev1.EventTypeWarning, ReasonCompletedLabelRestored, "%s",
		fmt.Sprintf("Node %s: its pod %s was labelled %s=true while the node was %s; the label is set back to false so the controller watches the pod until the node's final state is recorded",
			n.Name, pod.Name, LabelCompleted, n.Phase))
	r.cfg.Log.Warn("restored the completed label of a pod whose node is not final", "workflow", wf.Namespace+"/"+wf.Name, "pod", pod.Namespace+"/"+pod.Name, "node", n.Name)
	return restored, nil
}
