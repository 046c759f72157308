package actions

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// Retry outcome reasons.
const (
	// ReasonWorkflowNotCompleted: only a Failed, Errored (or, with restartSuccessful, Succeeded) workflow runs again.
	ReasonWorkflowNotCompleted = "WorkflowNotCompleted"
	// ReasonNothingToRetry: no node would run again (none failed and none selected, or the workflow never started).
	ReasonNothingToRetry = "NothingToRetry"
	// ReasonInvalidParameter: a parameter override is not NAME=VALUE of an argument the workflow declares.
	ReasonInvalidParameter = "InvalidParameter"
	// ReasonInvalidNodeTree: the node tree cannot be walked (a node no other node lists as a child).
	ReasonInvalidNodeTree = "InvalidNodeTree"
	// ReasonRetryOverridesNotAuthorized: a Retry that rewrites the workflow (RewritesWorkflow) was not
	// checked at admission by the policy that requires update on the workflow (RetryOverridesPolicy).
	ReasonRetryOverridesNotAuthorized = "RetryOverridesNotAuthorized"
)

// RetryOverridesPolicy is the ValidatingAdmissionPolicy (and binding) of config/policy that lets only those
// who may update a workflow create a Retry that rewrites it.
const RetryOverridesPolicy = "wfguard-retry-overrides-need-update"

// RewritesWorkflow reports whether the action is a Retry that does more than run the failed nodes again with
// the same arguments: new argument values (which the workflow's templates expand and run), or succeeded
// nodes run again. argo's retry with these options needs update on the workflow; so does this one, checked
// at admission by RetryOverridesPolicy, since the controller never learns who created the action.
func RewritesWorkflow(spec *v1alpha1.WorkflowActionSpec) bool {
	r := spec.Retry
	return spec.Action == v1alpha1.ActionRetry && r != nil && (len(r.Parameters) > 0 || r.RestartSuccessful || r.NodeFieldSelector != "")
}

// Bounds of a Retry's parameter overrides, the same as the CRD's.
const (
	MaxRetryParameters      = 64
	MaxRetryParameterLength = 32 << 10
)

// retry runs a completed workflow again as argo's retry does: the failed execution nodes (and, with
// restartSuccessful, the selected ones) are removed with everything after them, their enclosing groups and
// boundaries are reset to Running, and the workflow goes back to Pending, to be started again once the
// controller has deleted the removed nodes' pods and task results (ext.RetryCleanupSince). The workflow is
// changed only when the outcome is Succeeded.
func retry(wf *wfv1.Workflow, ext *extstatus.Extensions, params *v1alpha1.RetryParameters, now metav1.Time) Outcome {
	if params == nil {
		params = &v1alpha1.RetryParameters{}
	}
	if out, ok := retryable(wf, params); !ok {
		return out
	}
	selected, out, ok := selectedForRetry(wf, params)
	if !ok {
		return out
	}
	tree, err := newNodeTree(wf)
	if err != nil {
		return failed(ReasonInvalidNodeTree, "cannot retry %s: %v", wf.Name, err)
	}
	seeds := tree.retrySeeds(selected)
	if len(seeds) == 0 {
		return failed(ReasonNothingToRetry, "workflow %s has no failed node to run again", wf.Name)
	}
	args, out, ok := overriddenArguments(wf, params.Parameters)
	if !ok {
		return out
	}
	removed, reset := tree.plan(seeds)
	applyRetryPlan(wf, removed, reset, now)
	if args != nil {
		wf.Spec.Arguments.Parameters = args
		if wf.Status.StoredWorkflowSpec != nil {
			wf.Status.StoredWorkflowSpec.Arguments.Parameters = slices.Clone(args)
		}
	}
	resetWorkflow(wf, ext, removed, now)
	return succeeded(fmt.Sprintf("retrying: %d nodes run again, %d groups reset", len(removed), len(reset)))
}

// retryable says whether the workflow's phase and the parameters allow a retry at all.
func retryable(wf *wfv1.Workflow, params *v1alpha1.RetryParameters) (Outcome, bool) {
	switch wf.Status.Phase {
	case wfv1.WorkflowFailed, wfv1.WorkflowError:
	case wfv1.WorkflowSucceeded:
		if !params.RestartSuccessful {
			return failed(ReasonNothingToRetry, "workflow %s Succeeded: to run some of its nodes again, set restartSuccessful and a nodeFieldSelector", wf.Name), false
		}
	default:
		return failed(ReasonWorkflowNotCompleted, "workflow %s is %s; only a completed workflow can be retried", wf.Name, phaseOrPending(wf.Status.Phase)), false
	}
	if len(wf.Status.Nodes) == 0 {
		// Rejected at start (e.g. an invalid spec): running it again would skip the validation it failed.
		return failed(ReasonNothingToRetry, "workflow %s never started (%s); submit it again instead", wf.Name, quoted(wf.Status.Message)), false
	}
	if params.RestartSuccessful != (params.NodeFieldSelector != "") {
		return failed(ReasonInvalidNodeFieldSelector, "restartSuccessful and nodeFieldSelector go together: the selector names the succeeded nodes to run again"), false
	}
	return Outcome{}, true
}

func phaseOrPending(p wfv1.WorkflowPhase) wfv1.WorkflowPhase {
	if p == wfv1.WorkflowUnknown {
		return wfv1.WorkflowPending
	}
	return p
}

// selectedForRetry are the nodes the selector names to run again.
func selectedForRetry(wf *wfv1.Workflow, params *v1alpha1.RetryParameters) (map[string]bool, Outcome, bool) {
	selected := map[string]bool{}
	if params.NodeFieldSelector == "" {
		return selected, Outcome{}, true
	}
	selector, err := fields.ParseSelector(params.NodeFieldSelector)
	if err != nil {
		return nil, failed(ReasonInvalidNodeFieldSelector, "nodeFieldSelector %q: %v", quoted(params.NodeFieldSelector), err), false
	}
	for id, n := range wf.Status.Nodes {
		if selector.Matches(nodeFields(&n)) {
			selected[id] = true
		}
	}
	return selected, Outcome{}, true
}

// overriddenArguments returns the workflow's argument parameters with the overrides applied, or nil when
// there are none. Unlike argo, an override of a parameter the workflow does not declare is refused: it
// would change nothing, silently.
func overriddenArguments(wf *wfv1.Workflow, overrides []string) ([]wfv1.Parameter, Outcome, bool) {
	if len(overrides) == 0 {
		return nil, Outcome{}, true
	}
	if len(overrides) > MaxRetryParameters {
		return nil, failed(ReasonInvalidParameter, "%d parameters, more than the limit of %d", len(overrides), MaxRetryParameters), false
	}
	declared := wf.Spec.Arguments.Parameters
	if wf.Status.StoredWorkflowSpec != nil {
		declared = wf.Status.StoredWorkflowSpec.Arguments.Parameters
	}
	args := make([]wfv1.Parameter, len(declared))
	for i := range declared {
		args[i] = *declared[i].DeepCopy()
	}
	for _, o := range overrides {
		name, value, ok := strings.Cut(o, "=")
		switch {
		case len(o) > MaxRetryParameterLength:
			return nil, failed(ReasonInvalidParameter, "a parameter of %d bytes, more than the limit of %d", len(o), MaxRetryParameterLength), false
		case !ok || name == "":
			return nil, failed(ReasonInvalidParameter, "parameter %q is not NAME=VALUE", quoted(o)), false
		}
		i := slices.IndexFunc(args, func(p wfv1.Parameter) bool { return p.Name == name })
		if i < 0 {
			return nil, failed(ReasonInvalidParameter, "workflow %s declares no argument parameter %q", wf.Name, quoted(name)), false
		}
		args[i].Value = wfv1.AnyStringPtr(value)
		args[i].ValueFrom = nil
	}
	return args, Outcome{}, true
}

// nodeFields are the fields argo's node field selectors match.
func nodeFields(n *wfv1.NodeStatus) fields.Set {
	set := fields.Set{"id": n.ID, "name": n.Name, "displayName": n.DisplayName, "templateName": n.TemplateName, "phase": string(n.Phase)}
	if n.TemplateRef != nil {
		set["templateName"] = n.TemplateRef.Template
		set["templateRef.name"] = n.TemplateRef.Name
		set["templateRef.template"] = n.TemplateRef.Template
	}
	if n.Inputs != nil {
		for _, p := range n.Inputs.Parameters {
			if p.Value != nil {
				set["inputs.parameters."+p.Name+".value"] = p.Value.String()
			}
		}
	}
	return set
}

// nodeTree is the workflow's nodes with the reverse of their Children links.
type nodeTree struct {
	wf      *wfv1.Workflow
	parents map[string][]string
}

func newNodeTree(wf *wfv1.Workflow) (*nodeTree, error) {
	t := &nodeTree{wf: wf, parents: map[string][]string{}}
	for _, id := range sortedIDs(wf.Status.Nodes) {
		for _, c := range wf.Status.Nodes[id].Children {
			if _, ok := wf.Status.Nodes[c]; !ok {
				return nil, fmt.Errorf("node %s lists child %s, which is not in the workflow", id, c)
			}
			t.parents[c] = append(t.parents[c], id)
		}
	}
	for _, id := range sortedIDs(wf.Status.Nodes) {
		n := wf.Status.Nodes[id]
		if len(t.parents[id]) == 0 && n.Name != wf.Name && !t.onExit(&n) && n.BoundaryID == "" {
			return nil, fmt.Errorf("node %s has no parent", n.Name)
		}
	}
	return t, nil
}

func sortedIDs(nodes wfv1.Nodes) []string {
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// onExit reports whether n belongs to the workflow's exit handler, which argo always runs again.
func (t *nodeTree) onExit(n *wfv1.NodeStatus) bool {
	return strings.HasPrefix(n.Name, t.wf.Name+".onExit")
}

// retrySeeds are the nodes that run again with everything after them: the selected ones, and the failed
// execution nodes (a retried attempt stands for its Retry node) after which nothing succeeded.
func (t *nodeTree) retrySeeds(selected map[string]bool) []string {
	return t.seedsWhere(selected, t.succeededAfter(selected))
}

// seedsWhere is retrySeeds with after saying whether a node is followed by a success.
func (t *nodeTree) seedsWhere(selected map[string]bool, after func(id string) bool) []string {
	seeds := map[string]bool{}
	for id := range selected {
		seeds[t.podOf(id)] = true
	}
	for _, id := range sortedIDs(t.wf.Status.Nodes) {
		n := t.wf.Status.Nodes[id]
		if !n.FailedOrError() || !executionNode(n.Type) || t.onExit(&n) {
			continue
		}
		seed := id
		if n.NodeFlag != nil && n.NodeFlag.Retried {
			if p := t.parentOfType(id, wfv1.NodeTypeRetry); p != "" {
				seed = p
			}
		}
		if !after(seed) {
			seeds[t.podOf(seed)] = true
		}
	}
	return slices.Sorted(maps.Keys(seeds))
}

func executionNode(t wfv1.NodeType) bool {
	return t == wfv1.NodeTypePod || t == wfv1.NodeTypeContainer || t == wfv1.NodeTypeHTTP || t == wfv1.NodeTypePlugin
}

// podOf is the Pod node a containerSet's Container node runs in (the pod runs again as a whole), else id.
func (t *nodeTree) podOf(id string) string {
	if t.wf.Status.Nodes[id].Type != wfv1.NodeTypeContainer {
		return id
	}
	if p := t.parentOfType(id, wfv1.NodeTypePod); p != "" {
		return p
	}
	return id
}

// parentOfType is the first parent of id of the given type, or "".
func (t *nodeTree) parentOfType(id string, typ wfv1.NodeType) string {
	for _, p := range t.parents[id] {
		if t.wf.Status.Nodes[p].Type == typ {
			return p
		}
	}
	return ""
}

// succeededAfter returns whether a node after id (its descendants) succeeded and is not selected to run
// again: argo then leaves id alone (e.g. a failed step continued on). Each node's answer is computed once:
// asking it per failed node walked the whole tree after each, quadratic in a status its writer shapes.
func (t *nodeTree) succeededAfter(selected map[string]bool) func(id string) bool {
	memo := map[string]bool{}
	var visit func(id string) bool
	visit = func(id string) bool {
		if v, ok := memo[id]; ok {
			return v
		}
		memo[id] = false // a cycle in a rewritten status adds nothing
		found := false
		for _, c := range t.wf.Status.Nodes[id].Children {
			if (!selected[c] && t.wf.Status.Nodes[c].Phase == wfv1.NodeSucceeded) || visit(c) {
				found = true
				break
			}
		}
		memo[id] = found
		return found
	}
	return visit
}

// descendants is every node reachable from the ids through Children, the ids included: one walk for all.
func (t *nodeTree) descendants(ids ...string) map[string]bool {
	seen := map[string]bool{}
	queue := []string{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range t.wf.Status.Nodes[cur].Children {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return seen
}

// plan returns the nodes removed (the seeds, everything after them, the exit handler's nodes) and the
// nodes reset to run again (the groups, Retry nodes and boundaries enclosing a seed).
func (t *nodeTree) plan(seeds []string) (removed, reset map[string]bool) {
	removed, reset = t.descendants(seeds...), map[string]bool{}
	for id, n := range t.wf.Status.Nodes {
		if t.onExit(&n) {
			removed[id] = true
		}
	}
	walked := map[string]bool{}
	for _, s := range seeds {
		t.resetEnclosing(s, reset, walked)
	}
	for id := range removed {
		delete(reset, id)
	}
	return removed, reset
}

// enclosingTypes are the node types that contain a node rather than only precede it.
var enclosingTypes = []wfv1.NodeType{wfv1.NodeTypeStepGroup, wfv1.NodeTypeTaskGroup, wfv1.NodeTypeRetry}

// resetEnclosing adds to reset what encloses id up to the root: the step or task group it is in, the
// Retry node it is an attempt of, and its boundary (the steps or DAG node), then theirs. The walk is
// bounded by the node count, so a boundary cycle in a rewritten status cannot hold the worker.
func (t *nodeTree) resetEnclosing(id string, reset, walked map[string]bool) {
	cur := id
	for range len(t.wf.Status.Nodes) {
		if walked[cur] {
			return // an earlier seed's walk went up from here: what encloses it is reset already
		}
		walked[cur] = true
		for _, typ := range enclosingTypes {
			if p := t.parentOfType(cur, typ); p != "" && t.encloses(p, cur) {
				reset[p] = true
			}
		}
		b := t.wf.Status.Nodes[cur].BoundaryID
		if _, ok := t.wf.Status.Nodes[b]; !ok {
			return // the root, or the exit handler's top node
		}
		reset[b] = true
		cur = b
	}
}

// encloses reports whether the group or Retry node p contains cur (rather than precedes it: a step group is
// also the child of every node of the group before it). Members are named after what contains them.
func (t *nodeTree) encloses(p, cur string) bool {
	pn, cn := t.wf.Status.Nodes[p], t.wf.Status.Nodes[cur]
	return strings.HasPrefix(cn.Name, pn.Name+".") || strings.HasPrefix(cn.Name, pn.Name+"(")
}

// applyRetryPlan removes and resets nodes, keeping the remaining nodes' links to what is left.
func applyRetryPlan(wf *wfv1.Workflow, removed, reset map[string]bool, now metav1.Time) {
	for id := range removed {
		delete(wf.Status.Nodes, id)
	}
	for id, n := range wf.Status.Nodes {
		n.Children = slices.DeleteFunc(n.Children, func(c string) bool { return removed[c] })
		n.OutboundNodes = slices.DeleteFunc(n.OutboundNodes, func(c string) bool { return removed[c] })
		if reset[id] {
			resetNode(&n, now)
		}
		wf.Status.Nodes[id] = n
	}
}

// resetNode makes a node run again, as argo resets it: skipped stays skipped, a suspend node's supplied
// outputs are asked for again.
func resetNode(n *wfv1.NodeStatus, now metav1.Time) {
	if n.Type == wfv1.NodeTypeSuspend && n.Outputs != nil {
		for i, p := range n.Outputs.Parameters {
			n.Outputs.Parameters[i] = wfv1.Parameter{Name: p.Name, ValueFrom: &wfv1.ValueFrom{Supplied: &wfv1.SuppliedValueFrom{}}}
		}
	}
	if n.Phase != wfv1.NodeSkipped {
		n.Phase = wfv1.NodeRunning
	}
	n.Message = ""
	n.StartedAt = now
	n.FinishedAt = metav1.Time{}
}

// resetWorkflow undoes the workflow's completion. It goes back to Pending rather than Running: the
// controller starts it (locks, budget, the Running event) once the removed nodes' pods are gone.
func resetWorkflow(wf *wfv1.Workflow, ext *extstatus.Extensions, removed map[string]bool, now metav1.Time) {
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	wf.Labels[common.LabelKeyCompleted] = "false"
	wf.Labels[common.LabelKeyPhase] = string(wfv1.WorkflowPending)
	delete(wf.Labels, common.LabelKeyWorkflowArchivingStatus)
	wf.Status.Phase = wfv1.WorkflowPending
	wf.Status.Message = ""
	wf.Status.FinishedAt = metav1.Time{}
	wf.Status.Conditions.UpsertCondition(wfv1.Condition{Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionFalse})
	wf.Status.PersistentVolumeClaims = nil
	wf.Spec.Shutdown = ""
	if wf.Status.StoredWorkflowSpec != nil {
		wf.Status.StoredWorkflowSpec.Shutdown = ""
	}
	if wf.Spec.ActiveDeadlineSeconds != nil && *wf.Spec.ActiveDeadlineSeconds == 0 {
		wf.Spec.ActiveDeadlineSeconds = nil // a terminated workflow's deadline
	}
	ext.Shutdown = ""
	taskresult.ForgetWaits(ext, removed)
	since := now
	ext.RetryCleanupSince = &since
}
