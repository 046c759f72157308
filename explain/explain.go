package explain

import (
	"slices"
	"sort"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/taskresult"
)

// Task-result states of a pod node, as found on the API server.
const (
	// ResultNone: no task result of this workflow exists for the node.
	ResultNone = "none"
	// ResultPlaceholder: the executor created it (report-outputs-completed=false) and wrote no outputs yet.
	ResultPlaceholder = "placeholder"
	// ResultIncomplete: outputs are written but the executor has not finalized the result.
	ResultIncomplete = "incomplete"
	// ResultComplete: finalized (report-outputs-completed=true); the executor writes nothing more.
	ResultComplete = "complete"
	// ResultForeign: a result of the node's name exists but another workflow UID owns it (a deleted
	// workflow of the same name); no controller merges it.
	ResultForeign = "foreign"
)

// Finalizer states of a node's pod.
const (
	// FinalizerHeld: the pod carries workflows.argoproj.io/status.
	FinalizerHeld = "held"
	// FinalizerReleased: wfguard added it (annotation wfguard.io/status-finalizer) and it is gone.
	FinalizerReleased = "released"
	// FinalizerNone: the pod has none and no sign it ever had one.
	FinalizerNone = "none"
)

// Tree is the explanation of one workflow.
type Tree struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       string    `json:"uid"`
	Phase     string    `json:"phase"`
	Message   string    `json:"message,omitempty"`
	Created   time.Time `json:"created"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// FinishedAt is set once the workflow completed.
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// LastWrite is the newest write of the Workflow object by anyone (managedFields).
	LastWrite time.Time `json:"lastWrite,omitzero"`
	Suspended bool      `json:"suspended"`
	// Shutdown is the accepted shutdown strategy (status.shutdown, else spec.shutdown).
	Shutdown    string `json:"shutdown,omitempty"`
	Parallelism int64  `json:"parallelism,omitempty"`
	// Wait is what the workflow as a whole waits on, if anything beyond its nodes.
	Wait  *Wait  `json:"wait,omitempty"`
	Nodes []Node `json:"nodes"`
	// Actions are the WorkflowActions targeting the workflow that have no outcome yet.
	Actions []Action `json:"pendingActions"`
	// Skipped lists what could not be read; the tree lacks that information.
	Skipped []string `json:"skipped,omitempty"`
	// Now is the time ages are measured from.
	Now time.Time `json:"now"`
}

// Node is one node of the tree, in depth-first order.
type Node struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName"`
	Depth       int       `json:"depth"`
	Type        string    `json:"type"`
	Phase       string    `json:"phase"`
	Message     string    `json:"message,omitempty"`
	StartedAt   time.Time `json:"startedAt,omitzero"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	// TaskResultSynced is argo's gate field (nil: the node is not gated).
	TaskResultSynced *bool `json:"taskResultSynced,omitempty"`
	Pod              *Pod  `json:"pod,omitempty"`
	// Result is the task-result state for pod nodes (Result* constants).
	Result string `json:"result,omitempty"`
	// Notes are inconsistencies worth knowing (e.g. a complete result the node does not reflect).
	Notes []string `json:"notes,omitempty"`
	Wait  *Wait    `json:"wait,omitempty"`
}

// Pod is a node's pod as found on the API server.
type Pod struct {
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Finalizer string `json:"finalizer"`
	Deleting  bool   `json:"deleting,omitempty"`
	// EndedAt is when its containers finished, for a terminal pod.
	EndedAt time.Time `json:"endedAt,omitzero"`
}

// Action is a pending WorkflowAction.
type Action struct {
	Name    string    `json:"name"`
	Action  string    `json:"action"`
	Created time.Time `json:"created"`
	// Recorded is true when the workflow's status.appliedActions records it: its effect is persisted and
	// only its own outcome is still to be written.
	Recorded bool `json:"recorded,omitempty"`
}

// Options tune an explanation.
type Options struct {
	Now time.Time
	// TaskResultTimeout is the controller's --task-result-timeout (default taskresult.DefaultTimeout).
	TaskResultTimeout time.Duration
}

// Explain builds the tree of a snapshot. It is pure: everything comes from the snapshot and opts.
func Explain(s *inspect.Snapshot, opts Options) Tree {
	if opts.TaskResultTimeout <= 0 {
		opts.TaskResultTimeout = taskresult.DefaultTimeout
	}
	wf := s.Workflow.WF
	t := Tree{Namespace: wf.Namespace, Name: wf.Name, UID: string(wf.UID), Phase: string(wf.Status.Phase), Message: wf.Status.Message,
		Created: wf.CreationTimestamp.Time, StartedAt: wf.Status.StartedAt.Time, FinishedAt: wf.Status.FinishedAt.Time,
		LastWrite: s.Workflow.LastWrite, Suspended: Suspended(s.Workflow), Shutdown: string(Shutdown(s.Workflow)),
		Skipped: s.Skipped, Now: opts.Now, Nodes: []Node{}, Actions: []Action{}}
	if wf.Spec.Parallelism != nil {
		t.Parallelism = *wf.Spec.Parallelism
	}
	c := newExplainer(s, opts)
	for _, id := range treeOrder(wf) {
		t.Nodes = append(t.Nodes, c.node(id.id, id.depth))
	}
	t.Wait = c.workflowWait()
	t.Actions = pendingActions(s)
	return t
}

// Suspended reports the accepted suspension (status.suspended) or the legacy spec.suspend.
func Suspended(w inspect.Workflow) bool {
	return (w.Ext.Suspended != nil && *w.Ext.Suspended) || (w.WF.Spec.Suspend != nil && *w.WF.Spec.Suspend)
}

// Shutdown is the accepted shutdown strategy, which supersedes spec.shutdown.
func Shutdown(w inspect.Workflow) wfv1.ShutdownStrategy {
	if w.Ext.Shutdown != "" {
		return w.Ext.Shutdown
	}
	return w.WF.Spec.Shutdown
}

type explainer struct {
	s       *inspect.Snapshot
	wf      *wfv1.Workflow
	opts    Options
	pods    map[string]*corev1.Pod
	results map[string]*wfv1.WorkflowTaskResult
	// running counts pod nodes with a live pod, for parallelism.
	running int
}

func newExplainer(s *inspect.Snapshot, opts Options) *explainer {
	c := &explainer{s: s, wf: s.Workflow.WF, opts: opts, pods: PodsByNode(s.Workflow.WF, s.Pods), results: map[string]*wfv1.WorkflowTaskResult{}}
	for _, r := range s.Results {
		if prev, ok := c.results[r.Name]; ok && inspect.OwnerUID(prev) == string(c.wf.UID) {
			continue // our own result wins over a foreign one of the same name
		}
		c.results[r.Name] = r
	}
	for id, pod := range c.pods {
		if n, ok := c.wf.Status.Nodes[id]; ok && !n.Phase.Completed() && !taskresult.PodEnded(pod) {
			c.running++
		}
	}
	return c
}

// PodsByNode maps node IDs to the workflow's pods, matched by owner UID (never by name alone).
func PodsByNode(wf *wfv1.Workflow, pods []*corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, pod := range pods {
		if owner := inspect.OwnerUID(pod); owner == string(wf.UID) || (owner == "" && pod.Labels[podspec.LabelWorkflowUID] == string(wf.UID)) {
			out[inspect.NodeID(pod)] = pod
		}
	}
	return out
}

// ResultState classifies a node's result for a workflow.
func ResultState(wf *wfv1.Workflow, r *wfv1.WorkflowTaskResult) string {
	switch {
	case r == nil:
		return ResultNone
	case inspect.OwnerUID(r) != string(wf.UID):
		return ResultForeign
	case taskresult.Complete(r):
		return ResultComplete
	case r.Outputs != nil && r.Outputs.HasOutputs():
		return ResultIncomplete
	}
	return ResultPlaceholder
}

func (c *explainer) node(id string, depth int) Node {
	n := c.wf.Status.Nodes[id]
	out := Node{ID: id, Name: n.Name, DisplayName: n.DisplayName, Depth: depth, Type: string(n.Type), Phase: string(n.Phase),
		Message: n.Message, StartedAt: n.StartedAt.Time, FinishedAt: n.FinishedAt.Time, TaskResultSynced: n.TaskResultSynced}
	if out.DisplayName == "" {
		out.DisplayName = n.Name
	}
	if n.Type == wfv1.NodeTypePod {
		out.Result = ResultState(c.wf, c.results[id])
		if pod := c.pods[id]; pod != nil {
			out.Pod = &Pod{Name: pod.Name, Phase: string(pod.Status.Phase), Finalizer: finalizerState(pod), Deleting: pod.DeletionTimestamp != nil}
			if taskresult.PodEnded(pod) {
				out.Pod.EndedAt = inspect.PodEnd(pod)
			}
		}
		out.Notes = c.notes(&n, c.results[id], out.Result)
	}
	out.Wait = c.wait(&n)
	return out
}

func finalizerState(pod *corev1.Pod) string {
	switch {
	case inspect.HoldsFinalizer(pod):
		return FinalizerHeld
	case pod.Annotations[podspec.AnnotationStatusFinalizerManaged] == "true":
		return FinalizerReleased
	}
	return FinalizerNone
}

// notes compares the node with its result on the server.
func (c *explainer) notes(n *wfv1.NodeStatus, r *wfv1.WorkflowTaskResult, result string) []string {
	var notes []string
	if result != ResultForeign && result != ResultNone {
		if unmerged := unmergedOutputs(r.Outputs, n.Outputs); len(unmerged) > 0 {
			notes = append(notes, "its task result has outputs the node does not show (not merged by the controller yet): "+joinList(unmerged))
		}
	}
	if result == ResultComplete && !taskresult.Synced(n) {
		notes = append(notes, "its task result is complete on the API server but the node's gate is still closed: the controller has not merged it yet")
	}
	if result == ResultForeign {
		notes = append(notes, "a task result of this node's name belongs to another workflow UID (a deleted workflow of the same name); it is ignored")
	}
	if n.Phase == wfv1.NodeSucceeded {
		if missing := MissingOutputs(c.template(n), n.Outputs); len(missing) > 0 {
			notes = append(notes, "Succeeded without declared outputs: "+joinList(missing)+" (partial success)")
		}
		if result != ResultComplete && result != ResultNone {
			notes = append(notes, "Succeeded although its task result is "+result)
		}
	}
	return notes
}

// template finds a node's template in the spec, or in the stored templates of argo's controller.
func (c *explainer) template(n *wfv1.NodeStatus) *wfv1.Template {
	return Template(c.wf, n)
}

// Template finds a node's template in the spec, else in argo's stored workflow spec.
func Template(wf *wfv1.Workflow, n *wfv1.NodeStatus) *wfv1.Template {
	if n.TemplateName == "" {
		return nil
	}
	if t := wf.GetTemplateByName(n.TemplateName); t != nil {
		return t
	}
	if wf.Status.StoredWorkflowSpec != nil {
		for i := range wf.Status.StoredWorkflowSpec.Templates {
			if t := &wf.Status.StoredWorkflowSpec.Templates[i]; t.Name == n.TemplateName {
				return t
			}
		}
	}
	return nil
}

// MissingOutputs lists the template's declared outputs that outputs lacks: output parameters without a
// value, non-optional artifacts, and a script's result.
func MissingOutputs(tmpl *wfv1.Template, outputs *wfv1.Outputs) []string {
	if tmpl == nil {
		return nil
	}
	var missing []string
	for _, p := range tmpl.Outputs.Parameters {
		if outputs == nil || !slices.ContainsFunc(outputs.Parameters, func(q wfv1.Parameter) bool { return q.Name == p.Name && q.Value != nil }) {
			missing = append(missing, "parameter "+p.Name)
		}
	}
	for _, a := range tmpl.Outputs.Artifacts {
		if a.Optional {
			continue
		}
		if outputs == nil || !slices.ContainsFunc(outputs.Artifacts, func(b wfv1.Artifact) bool { return b.Name == a.Name }) {
			missing = append(missing, "artifact "+a.Name)
		}
	}
	if tmpl.Script != nil && (outputs == nil || outputs.Result == nil) {
		missing = append(missing, "result")
	}
	return missing
}

// unmergedOutputs lists the parameters, artifacts and result a task result carries that the node lacks.
func unmergedOutputs(result, node *wfv1.Outputs) []string {
	if result == nil {
		return nil
	}
	var out []string
	for _, p := range result.Parameters {
		if p.Value != nil && (node == nil || !slices.ContainsFunc(node.Parameters, func(q wfv1.Parameter) bool { return q.Name == p.Name && q.Value != nil })) {
			out = append(out, "parameter "+p.Name)
		}
	}
	for _, a := range result.Artifacts {
		if node == nil || !slices.ContainsFunc(node.Artifacts, func(b wfv1.Artifact) bool { return b.Name == a.Name }) {
			out = append(out, "artifact "+a.Name)
		}
	}
	if result.Result != nil && (node == nil || node.Result == nil) {
		out = append(out, "result")
	}
	return out
}

type placed struct {
	id    string
	depth int
}

// treeOrder walks the nodes depth-first from the root (the node named after the workflow), following
// each node's children in order; nodes no walk reaches (e.g. exit handlers) follow at depth 0 by start.
func treeOrder(wf *wfv1.Workflow) []placed {
	var out []placed
	seen := map[string]bool{}
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		if seen[id] {
			return
		}
		n, ok := wf.Status.Nodes[id]
		if !ok {
			return
		}
		seen[id] = true
		out = append(out, placed{id, depth})
		for _, child := range n.Children {
			walk(child, depth+1)
		}
	}
	root := ""
	for id, n := range wf.Status.Nodes {
		if n.Name == wf.Name {
			root = id
		}
	}
	walk(root, 0)
	var rest []string
	for id := range wf.Status.Nodes {
		if !seen[id] {
			rest = append(rest, id)
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		a, b := wf.Status.Nodes[rest[i]], wf.Status.Nodes[rest[j]]
		if !a.StartedAt.Equal(&b.StartedAt) {
			return a.StartedAt.Before(&b.StartedAt)
		}
		return a.Name < b.Name
	})
	for _, id := range rest {
		walk(id, 0)
	}
	return out
}

func pendingActions(s *inspect.Snapshot) []Action {
	wf := s.Workflow.WF
	var list []*actionsv1.WorkflowAction
	for _, a := range s.Actions {
		if !a.Status.Terminal() && (a.Spec.WorkflowRef.UID == "" || a.Spec.WorkflowRef.UID == wf.UID) {
			list = append(list, a)
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if !list[i].CreationTimestamp.Equal(&list[j].CreationTimestamp) {
			return list[i].CreationTimestamp.Before(&list[j].CreationTimestamp)
		}
		return list[i].Name < list[j].Name
	})
	out := []Action{}
	for _, a := range list {
		recorded := slices.ContainsFunc(s.Workflow.Ext.AppliedActions, func(r extstatus.AppliedAction) bool { return r.UID == a.UID })
		out = append(out, Action{Name: a.Name, Action: a.Spec.Action, Created: a.CreationTimestamp.Time, Recorded: recorded})
	}
	return out
}
