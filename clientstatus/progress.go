package clientstatus

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
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
