package taskresult

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podidentity"
)

// Why a result was not merged. The values are metric label values.
const (
	// IgnoredForeign: owned by another workflow UID (e.g. a deleted workflow of the same name), or labelled
	// for another workflow, or in another namespace.
	IgnoredForeign = "foreign_owner"
	// IgnoredUnknownNode: the result's name is no node of the workflow.
	IgnoredUnknownNode = "unknown_node"
	// IgnoredNotAPodNode: the node has no executor (suspend, steps, ...): its outputs come from the
	// controller or an action, never from a result.
	IgnoredNotAPodNode = "not_a_pod_node"
	// IgnoredNoMatchingPod: the node's pod, as the controller created it, is not there to have written it.
	IgnoredNoMatchingPod = "no_matching_pod"
	// IgnoredPredatesPod: the result was created before the node's pod, so no executor in it wrote it.
	IgnoredPredatesPod = "predates_pod"
	// IgnoredOtherPod: the admission policy's stamp says another pod wrote the result (e.g. a pod of
	// another workflow whose node name hashes like this node's), not the pod the controller created for it.
	IgnoredOtherPod = "other_pod"
	// IgnoredOtherAccount: the admission policy's stamp says a ServiceAccount token without pod claims (an
	// executor ServiceAccount's, as argoexec mounts it) wrote the result, and the node's pod was not created
	// to run argoexec as that account (another account, or none), or the stamp also names a pod.
	IgnoredOtherAccount = "other_account"
)

// Who created or last updated a result, stamped by the admission policy
// config/policy/taskresult-writer-stamp.yaml from the writer's identity; a writer cannot choose them. A
// pod-bound ServiceAccount token stamps its pod (name and UID, from the token's pod claims) and an empty
// account; a ServiceAccount token without pod claims (an executor.serviceAccountName token Secret) stamps
// its account's name and empty pod stamps.
const (
	AnnotationWriterPodName        = "wfguard.io/writer-pod-name"
	AnnotationWriterPodUID         = "wfguard.io/writer-pod-uid"
	AnnotationWriterServiceAccount = "wfguard.io/writer-service-account"
)

// Ignored is one result that was not merged, and why.
type Ignored struct {
	Name   string
	Reason string
}

// MergeStats says what one merge did.
type MergeStats struct {
	// Changed is true when any node's outputs, progress or sync state changed.
	Changed bool
	// Completed counts nodes that became synced in this merge.
	Completed int
	// Ignored lists the results that decided nothing, with the reason.
	Ignored []Ignored
	// Pending counts results of Pod nodes whose pod is not observed yet (a lagging pod cache; a later merge
	// takes them) and of settled nodes whose pod was collected: neither is reported as ignored.
	Pending int
}

// Owned returns the results that may decide their node (see Merge), by node ID.
func Owned(wf *wfv1.Workflow, results []*wfv1.WorkflowTaskResult, pods map[string]*corev1.Pod) map[string]*wfv1.WorkflowTaskResult {
	out := map[string]*wfv1.WorkflowTaskResult{}
	for _, r := range results {
		if reason, _ := check(wf, r, pods); reason == "" {
			out[r.Name] = r
		}
	}
	return out
}

// check says why r may not decide its node ("" when it may): a result decides only a Pod node of its own
// workflow (namespace, owner UID, workflow label), and only while the pod the controller created for that
// node is there (podidentity), not created before that pod, and, when the admission policy stamped who
// wrote it, written by that pod (name and UID: a node ID is only a 32-bit hash, and another workflow's pod
// can share it) or by the executor ServiceAccount that pod was created to run argoexec as. A result
// without the stamp (a cluster without the policy) is judged without it. pending is true for a Pod node
// whose pod is not observed yet.
func check(wf *wfv1.Workflow, r *wfv1.WorkflowTaskResult, pods map[string]*corev1.Pod) (reason string, pending bool) {
	if r.Namespace != wf.Namespace || !OwnedBy(r, wf) || r.Labels[common.LabelKeyWorkflow] != wf.Name {
		return IgnoredForeign, false
	}
	node, ok := wf.Status.Nodes[r.Name]
	switch {
	case !ok:
		return IgnoredUnknownNode, false
	case node.Type != wfv1.NodeTypePod:
		return IgnoredNotAPodNode, false
	}
	pod := pods[r.Name]
	if pod == nil && node.Phase.Completed() && Synced(&node) {
		// Settled: its pod was collected (podGC) after the result was merged; nothing is left to decide.
		return IgnoredNoMatchingPod, true
	}
	if pod == nil {
		return IgnoredNoMatchingPod, node.Phase == wfv1.NodePending || node.Phase == ""
	}
	if podidentity.Check(podidentity.OwnerOf(wf), &node, pod) != podidentity.Match {
		return IgnoredNoMatchingPod, false
	}
	if r.CreationTimestamp.Before(&pod.CreationTimestamp) {
		return IgnoredPredatesPod, false
	}
	if account := r.Annotations[AnnotationWriterServiceAccount]; account != "" {
		if !writtenByAccount(r, pod, account) {
			return IgnoredOtherAccount, false
		}
		return "", false
	}
	if !writtenBy(r, pod) {
		return IgnoredOtherPod, false
	}
	return "", false
}

// writtenByAccount reports whether a result stamped as written by ServiceAccount account, without pod
// claims, may be pod's: pod was created to run argoexec as that account (a fact of its immutable spec,
// podspec.ExecutorServiceAccountOf), and the stamp names no pod. The account's token reaches every pod
// run as that executor account in the namespace, so this is argo's trust, scoped to the account.
func writtenByAccount(r *wfv1.WorkflowTaskResult, pod *corev1.Pod, account string) bool {
	return r.Annotations[AnnotationWriterPodName] == "" && r.Annotations[AnnotationWriterPodUID] == "" &&
		podspec.ExecutorServiceAccountOf(pod) == account
}

// writtenBy reports whether the result's writer stamp, if it has one (either annotation), names pod.
func writtenBy(r *wfv1.WorkflowTaskResult, pod *corev1.Pod) bool {
	name, hasName := r.Annotations[AnnotationWriterPodName]
	uid, hasUID := r.Annotations[AnnotationWriterPodUID]
	if !hasName && !hasUID {
		return true
	}
	return name == pod.Name && uid == string(pod.UID)
}

// Merge is the reconcile-task-results phase: it copies each result's outputs and progress into its node
// and marks the node synced once the executor has finalized the result (report-outputs-completed=true).
// Only results that may decide their node are merged (see check); an exit code the controller recorded
// from the pod is never replaced by one a result claims.
func Merge(wf *wfv1.Workflow, results []*wfv1.WorkflowTaskResult, pods map[string]*corev1.Pod) MergeStats {
	var stats MergeStats
	for _, r := range results {
		if reason, pending := check(wf, r, pods); reason != "" {
			if pending {
				stats.Pending++
			} else {
				stats.Ignored = append(stats.Ignored, Ignored{Name: r.Name, Reason: reason})
			}
			continue
		}
		node := wf.Status.Nodes[r.Name]
		changed := false
		if r.Outputs != nil && r.Outputs.HasOutputs() {
			merged := r.Outputs.DeepCopy()
			if node.Outputs != nil && node.Outputs.ExitCode != nil {
				merged.ExitCode = node.Outputs.ExitCode
			}
			keepSetParameters(merged, node.Outputs)
			if node.Outputs == nil || !equalOutputs(node.Outputs, merged) {
				node.Outputs = merged
				changed = true
			}
		}
		// argo's Progress.IsValid panics on a progress without '/', which a pod's task result may carry
		if clientstatus.ValidProgress(r.Progress) && node.Progress != r.Progress {
			node.Progress = r.Progress
			changed = true
		}
		if r.Labels[common.LabelKeyReportOutputsCompleted] == "true" && (node.TaskResultSynced == nil || !*node.TaskResultSynced) {
			synced := true
			node.TaskResultSynced = &synced
			changed = true
			stats.Completed++
		}
		if changed {
			wf.Status.Nodes[r.Name] = node
			stats.Changed = true
		}
	}
	return stats
}

// OwnedBy reports whether the result's ownerReferences name the workflow's UID.
func OwnedBy(r *wfv1.WorkflowTaskResult, wf *wfv1.Workflow) bool {
	for _, o := range r.OwnerReferences {
		if o.Kind == "Workflow" && o.UID == wf.UID {
			return true
		}
	}
	return false
}

func equalOutputs(a, b *wfv1.Outputs) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// keepSetParameters carries into merged each parameter value the node already has and merged lacks (a
// declared default the controller applied): a result never erases a value.
func keepSetParameters(merged, node *wfv1.Outputs) {
	if node == nil {
		return
	}
	for _, p := range node.Parameters {
		if p.Value != nil && !hasValue(merged, p.Name) {
			merged.Parameters = append(merged.Parameters, p)
		}
	}
}
