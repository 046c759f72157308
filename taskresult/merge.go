package taskresult

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"k8s.io/apimachinery/pkg/api/equality"
)

// MergeStats says what one merge did.
type MergeStats struct {
	// Changed is true when any node's outputs, progress or sync state changed.
	Changed bool
	// Completed counts nodes that became synced in this merge.
	Completed int
	// Foreign lists results ignored because they belong to another workflow UID (e.g. a deleted
	// workflow of the same name).
	Foreign []string
	// Unknown lists results of this workflow whose name matches no node.
	Unknown []string
}

// Owned returns the results that belong to wf (owner UID), by node ID.
func Owned(wf *wfv1.Workflow, results []*wfv1.WorkflowTaskResult) map[string]*wfv1.WorkflowTaskResult {
	out := map[string]*wfv1.WorkflowTaskResult{}
	for _, r := range results {
		if ownedBy(r, wf) {
			out[r.Name] = r
		}
	}
	return out
}

// Merge is the reconcile-task-results phase: it copies each result's outputs and progress into its node
// and marks the node synced once the executor has finalized the result (report-outputs-completed=true).
// Results are matched by node ID (their name) and by the workflow UID of their owner reference.
func Merge(wf *wfv1.Workflow, results []*wfv1.WorkflowTaskResult) MergeStats {
	var stats MergeStats
	for _, r := range results {
		if !ownedBy(r, wf) {
			stats.Foreign = append(stats.Foreign, r.Name)
			continue
		}
		node, ok := wf.Status.Nodes[r.Name]
		if !ok {
			stats.Unknown = append(stats.Unknown, r.Name)
			continue
		}
		changed := false
		if r.Outputs != nil && r.Outputs.HasOutputs() {
			merged := r.Outputs.DeepCopy()
			if merged.ExitCode == nil && node.Outputs != nil {
				merged.ExitCode = node.Outputs.ExitCode
			}
			keepSetParameters(merged, node.Outputs)
			if node.Outputs == nil || !equalOutputs(node.Outputs, merged) {
				node.Outputs = merged
				changed = true
			}
		}
		if r.Progress.IsValid() && node.Progress != r.Progress {
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

func ownedBy(r *wfv1.WorkflowTaskResult, wf *wfv1.Workflow) bool {
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
