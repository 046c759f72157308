package clientstatus

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/resource"
	corev1 "k8s.io/api/core/v1"
)

// podNodeDurations gives each fulfilled pod node that has none its pod's resource durations (argo's
// resource.DurationForPod: each container's requests, else limits, else 100m CPU and 100Mi memory, times
// the seconds it ran, terminated containers only), computed once, when the node is first seen fulfilled
// with its pod, as argo's pod assessment does when it stamps the node's finish.
func podNodeDurations(wf *wfv1.Workflow, pods map[string]*corev1.Pod) {
	for id, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypePod || n.ResourcesDuration != nil || !n.Fulfilled() {
			continue
		}
		pod := pods[id]
		if pod == nil {
			continue // never ran, or gone: argo has no pod to measure either
		}
		n.ResourcesDuration = resource.DurationForPod(pod)
		wf.Status.Nodes[id] = n
	}
}
