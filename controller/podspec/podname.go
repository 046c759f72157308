package podspec

import (
	"fmt"
	"hash/fnv"
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
