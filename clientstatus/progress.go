package clientstatus

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/argoproj/argo-workflows/v3/workflow/progress"
	corev1 "k8s.io/api/core/v1"
)

// ValidProgress is argo's Progress.IsValid ("N/M", 0 <= N <= M, M > 0) without its panic: argo's method
// indexes the part after the '/' unchecked, so a progress without one ("5"), which a pod's task result or
// annotation may carry, panics it.
func ValidProgress(p wfv1.Progress) bool {
	return strings.Contains(string(p), "/") && p.IsValid()
}

// AnnotatedProgress is the initial progress a pod's workflows.argoproj.io/progress annotation gives its
// node when the pod is built (argo's createWorkflowPod; the annotation comes from the template's metadata
// or podMetadata); false when it has none or it is not a valid progress.
func AnnotatedProgress(pod *corev1.Pod) (wfv1.Progress, bool) {
	v, ok := pod.Annotations[common.AnnotationKeyProgress]
	if !ok || !ValidProgress(wfv1.Progress(v)) {
		return "", false
	}
	return wfv1.Progress(v), true
}

// updateProgress is argo's progress.UpdateProgress (called where argo's persistUpdates calls it): every
// executable node without progress gets 0/1, a succeeded, skipped or omitted one is complete (M/M),
// steps, DAG and group nodes sum their descendants', and status.progress sums the executable nodes'. A pod
// node whose progress is not valid is reset to 0/1 first, as argo's pod assessment does, and so is any
// other progress argo's method would panic on.
func updateProgress(wf *wfv1.Workflow) {
	for id, n := range wf.Status.Nodes {
		if n.Progress == "" || ValidProgress(n.Progress) {
			continue
		}
		if n.Type == wfv1.NodeTypePod || !strings.Contains(string(n.Progress), "/") {
			n.Progress = wfv1.ProgressDefault
			wf.Status.Nodes[id] = n
		}
	}
	progress.UpdateProgress(wf)
}
