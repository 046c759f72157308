package podspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// maxPodNamePrefix leaves room in a 253-character object name for "-" plus the
// decimal fnv32a hash (at most 10 digits), which is how argo v2 names are cut.
const maxPodNamePrefix = 253 - 10 - 1

// PodName returns the argo "v2" pod name for a node. Argo Server and the
// argoexec wait container derive the same name from the same inputs, so the
// format must not drift. nodeID is accepted for symmetry with argo's v1 format
// (where the pod name is the node ID) but the v2 format does not use it.
func PodName(workflowName, nodeName, templateName, nodeID string) string {
	if workflowName == nodeName {
		return workflowName
	}
	prefix := workflowName
	if templateName != "" {
		prefix += "-" + templateName
	}
	if len(prefix) > maxPodNamePrefix {
		prefix = prefix[:maxPodNamePrefix]
	}
	return fmt.Sprintf("%s-%d", prefix, fnv32a(nodeName))
}

func fnv32a(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s)) // hash.Hash.Write never returns an error
	return h.Sum32()
}

// substitutePodName replaces {{pod.name}} anywhere in the pod, ARGO_TEMPLATE
// included, as argo does once the name is known: a resource template patches
// its own pod by naming it that way. Other variables were substituted before
// Build and any left over stay as they are.
func substitutePodName(pod *corev1.Pod) (*corev1.Pod, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encoding pod to substitute {{%s}}: %w", common.LocalVarPodName, err)
	}
	if !bytes.Contains(data, []byte("{{")) {
		// No tag at all, the usual pod: decoding it back was a fifth of the pass that starts a node.
		return pod, nil
	}
	replaced, err := template.Replace(string(data), map[string]string{common.LocalVarPodName: pod.Name}, true)
	if err != nil {
		return nil, fmt.Errorf("substituting {{%s}}: %w", common.LocalVarPodName, err)
	}
	var out corev1.Pod
	if err := json.Unmarshal([]byte(replaced), &out); err != nil {
		return nil, fmt.Errorf("decoding pod after substituting {{%s}}: %w", common.LocalVarPodName, err)
	}
	return &out, nil
}
