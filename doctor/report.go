package doctor

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Check names, in the order the audit runs them.
const (
	CheckPartialSuccess   = "partial-success"
	CheckIncompleteResult = "incomplete-result"
	CheckFinalizerHeld    = "finalizer-held"
	CheckStaleAction      = "stale-action"
	CheckNotReconciled    = "not-reconciled"
	CheckExecutorRBAC     = "executor-rbac"
	CheckWorkflowCRD      = "workflow-crd"
)

// Repair kinds: the only changes doctor ever makes.
const (
	// RepairReleaseFinalizer removes workflows.argoproj.io/status from a pod whose workflow is gone.
	RepairReleaseFinalizer = "release-finalizer"
	// RepairFinalizeResult labels the task result of a node whose pod is gone
	// report-outputs-completed=true, as argoexec would have: nothing will ever write to it again.
	RepairFinalizeResult = "finalize-result"
)

// Report is the outcome of one audit.
type Report struct {
	// Namespace is the audited namespace; "" means all namespaces.
	Namespace string        `json:"namespace"`
	Now       time.Time     `json:"now"`
	Checks    []CheckResult `json:"checks"`
}

// CheckResult is what one check found, or why it (partly) could not run.
type CheckResult struct {
	Name     string    `json:"name"`
	Findings []Finding `json:"findings"`
	// Skipped lists reads the check needed and could not do; each is one line.
	Skipped []string `json:"skipped,omitempty"`
}

// Finding is one problem.
type Finding struct {
	Namespace string `json:"namespace,omitempty"`
	Workflow  string `json:"workflow,omitempty"`
	// Object names what is wrong, e.g. "pod/x", "node wf.a (wf-123)", "workflowaction/a".
	Object  string `json:"object"`
	Message string `json:"message"`
	// Since is when the problem began, when known.
	Since  time.Time `json:"since,omitzero"`
	Repair *Repair   `json:"repair,omitempty"`
}

// Repair is a safe change doctor can make for a finding; it is re-verified before it is applied.
type Repair struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Workflow and WorkflowUID: for release-finalizer the workflow that is gone, for finalize-result the
	// one whose node's pod is gone. NodeID is set for finalize-result.
	Workflow    string    `json:"workflow"`
	WorkflowUID types.UID `json:"workflowUID"`
	NodeID      string    `json:"nodeID,omitempty"`
}

// Problems counts the findings of all checks.
func (r Report) Problems() int {
	n := 0
	for _, c := range r.Checks {
		n += len(c.Findings)
	}
	return n
}

// Skipped counts the checks that skipped some or all of their reads.
func (r Report) Skipped() int {
	n := 0
	for _, c := range r.Checks {
		if len(c.Skipped) > 0 {
			n++
		}
	}
	return n
}

// Repairs lists every finding's repair.
func (r Report) Repairs() []Repair {
	var out []Repair
	for _, c := range r.Checks {
		for _, f := range c.Findings {
			if f.Repair != nil {
				out = append(out, *f.Repair)
			}
		}
	}
	return out
}
