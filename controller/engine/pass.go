package engine

import (
	"fmt"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/custommetrics"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// Pass is one reconcile of one workflow: the in-memory workflow every phase reads and mutates, the
// observations it is based on, and what the phases ask of the controller afterwards.
type Pass struct {
	WF  *wfv1.Workflow
	Ext *extstatus.Extensions
	// Pods of this workflow (owner UID checked), by node ID.
	Pods map[string]*corev1.Pod
	// Unverified marks nodes whose pod is missing from the cache and could not be confirmed gone on the
	// server this pass: they are not declared deleted.
	Unverified map[string]bool
	// ResultUnverified marks nodes whose result needed a read past the cache this pass that could not be
	// made (read budget spent, API error): their wait does not expire on what the cache alone shows.
	ResultUnverified map[string]bool
	// Results of this workflow (owner UID checked) by node ID, as read this pass (cache or past it).
	Results map[string]*wfv1.WorkflowTaskResult
	// StaleResults are this workflow's results left by a previous run, by node ID (taskresult.Stale): a
	// node's is deleted before its pod is created again.
	StaleResults map[string]*wfv1.WorkflowTaskResult
	// TaskResultTimeout bounds a node's wait for its result after its pod ended.
	TaskResultTimeout time.Duration
	Now               time.Time

	// Events are node and workflow transitions, recorded after the pass is persisted.
	Events []Event
	// Adopting marks a running workflow this controller has not written since it started: another
	// controller (stock argo, before a cutover) may have started it, so Start checks it can carry it on.
	Adopting bool
	// AtStart is the workflow as the pass began (StartStateOf), to tell what the pass completed; nil
	// records no custom metrics.
	AtStart *StartState
	// Metrics are the custom metric emissions of this pass, emitted after it is persisted.
	Metrics []custommetrics.Emission
	// depth is the template nesting of the current executeTemplate call (recursion guard).
	depth int
	// created counts the nodes this pass created (MaxNodesPerPass).
	created int
	// requeueAt is the earliest time a timer (suspend duration, deadline) needs another pass.
	requeueAt time.Time
	// extraGlobals override {{workflow.*}} variables while an exit handler runs (workflow.status, ...).
	extraGlobals map[string]string
	// creates are the pods this pass decided to create; Execute creates them together at its end.
	creates []podCreate
	// exiting is true while an exit handler runs: its pods run on Stop and past the deadline.
	exiting bool
	// base is where template names of the steps or DAG being run resolve (the workflow, or a
	// WorkflowTemplate reached through templateRef); new nodes record it as their templateScope.
	base templateBase
	// oldPodWaits are the nodes found waiting for an earlier workflow's pod, as they were, by node ID: their
	// pods are built and created again this pass.
	oldPodWaits map[string]wfv1.NodeStatus
	// holders are the WorkflowTemplates read this pass, by scope/name.
	holders map[string]wfv1.TemplateHolder
	// executorTokens are the executor ServiceAccounts' token Secrets found this pass, by account.
	executorTokens map[string]executorToken
	// retryOfAttempt maps an attempt's node ID to its retry node's, for attempts whose pods must avoid the
	// hosts where earlier attempts failed (retryStrategy.affinity.nodeAntiAffinity).
	retryOfAttempt map[string]string
	// estimate is the workflow's duration estimate (Engine.Estimates), set by Start and Execute; nil: none.
	estimate *clientstatus.Estimate
	// paramConfigMaps is the engine's store of parameter ConfigMaps (set by Start and Execute; nil: none).
	paramConfigMaps common.ConfigMapStore
}

func (p *Pass) configMaps() common.ConfigMapStore {
	if p.paramConfigMaps == nil {
		return noParameterConfigMaps{}
	}
	return p.paramConfigMaps
}

// globals are the {{workflow.*}} variables of this pass.
func (p *Pass) globals() map[string]string {
	g := globalParams(p.WF)
	g["workflow.duration"] = workflowDuration(p.WF, p.Now)
	if cm, err := configMapGlobals(p.configMaps(), p.WF); err == nil { // a failure ended the workflow at its start
		for k, v := range cm {
			g[k] = v
		}
	}
	for k, v := range p.extraGlobals {
		g[k] = v
	}
	return g
}

// workflowDuration is {{workflow.duration}}: seconds since the workflow started (until it finished), in
// argo's %f format.
func workflowDuration(wf *wfv1.Workflow, now time.Time) string {
	if wf.Status.StartedAt.IsZero() {
		return fmt.Sprintf("%f", 0.0)
	}
	end := now
	if !wf.Status.FinishedAt.IsZero() {
		end = wf.Status.FinishedAt.Time
	}
	return fmt.Sprintf("%f", end.Sub(wf.Status.StartedAt.Time).Seconds())
}

// Event is a transition worth an Event on the Workflow.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// RequeueAfter is how long until a timer of this pass expires; zero when none is pending.
func (p *Pass) RequeueAfter() time.Duration {
	if p.requeueAt.IsZero() {
		return 0
	}
	if d := p.requeueAt.Sub(p.Now); d > 0 {
		return d
	}
	return time.Millisecond
}

// RequeueBy asks for another pass no later than t.
func (p *Pass) RequeueBy(t time.Time) { p.requeueBy(t) }

func (p *Pass) requeueBy(t time.Time) {
	if p.requeueAt.IsZero() || t.Before(p.requeueAt) {
		p.requeueAt = t
	}
}

func (p *Pass) now() metav1.Time { return metav1.NewTime(p.Now) }

// recordResultWait records in the status extension when node id began waiting for its result (an earlier
// record wins) and returns the start.
func (p *Pass) recordResultWait(id string, since time.Time) time.Time {
	if p.Ext == nil {
		p.Ext = &extstatus.Extensions{}
	}
	return taskresult.RecordWait(p.Ext, id, since)
}

// node returns a copy of the node named name, or nil.
func (p *Pass) node(name string) *wfv1.NodeStatus {
	n, ok := p.WF.Status.Nodes[p.WF.NodeID(name)]
	if !ok {
		return nil
	}
	return &n
}

// peekNode is a node as stored, to read: unlike node it puts no copy on the heap, which the DAG's checks
// of every task and dependency on every pass made the largest allocation of a pass. Changes go through node.
func (p *Pass) peekNode(name string) (wfv1.NodeStatus, bool) {
	n, ok := p.WF.Status.Nodes[p.WF.NodeID(name)]
	return n, ok
}

// nodeFulfilled is fulfilled(p.node(name)) without the copy.
func (p *Pass) nodeFulfilled(name string) bool {
	n, ok := p.peekNode(name)
	return ok && fulfilled(&n)
}

func (p *Pass) nodeByID(id string) *wfv1.NodeStatus {
	n, ok := p.WF.Status.Nodes[id]
	if !ok {
		return nil
	}
	return &n
}

// forgetNode removes a node and every reference to it, as if it had never been created.
func (p *Pass) forgetNode(id string) {
	delete(p.WF.Status.Nodes, id)
	for pid, n := range p.WF.Status.Nodes {
		if i := slices.Index(n.Children, id); i >= 0 {
			n.Children = slices.Delete(slices.Clone(n.Children), i, i+1)
			p.WF.Status.Nodes[pid] = n
		}
	}
}

func (p *Pass) setNode(n *wfv1.NodeStatus) {
	if p.WF.Status.Nodes == nil {
		p.WF.Status.Nodes = wfv1.Nodes{}
	}
	p.WF.Status.Nodes[n.ID] = *n
}

// nodeAt is where a new node sits: its name, display name, the template it runs and its boundary.
type nodeAt struct {
	name, display, template, boundary string
}

// localScopeName names the workflow in a local TemplateScope: argo runs a workflowTemplateRef's workflow
// from an unnamed copy of its stored spec, so its local nodes record "local/" and the others "local/NAME".
func (p *Pass) localScopeName() string {
	if p.WF.Spec.WorkflowTemplateRef != nil {
		return ""
	}
	return p.WF.Name
}

// newNode records a node; its ID is argo's NodeID(name), so IDs are stable across passes and restarts.
func (p *Pass) newNode(at nodeAt, typ wfv1.NodeType, phase wfv1.NodePhase, message string) *wfv1.NodeStatus {
	n := &wfv1.NodeStatus{
		ID:            p.WF.NodeID(at.name),
		Name:          at.name,
		DisplayName:   at.display,
		Type:          typ,
		TemplateName:  at.template,
		TemplateScope: p.base.scopeString(p.localScopeName()),
		BoundaryID:    at.boundary,
		Phase:         phase,
		Message:       message,
		StartedAt:     p.now(),
		// argo estimates each node when it initializes it, from the node of the same name in the baseline run
		EstimatedDuration: p.estimate.Node(at.name),
	}
	if phase.Fulfilled(nil) {
		n.FinishedAt = p.now()
	}
	p.setNode(n)
	p.created++
	return n
}

// markPhase moves a node to phase with message; completing it stamps FinishedAt and records an Event.
func (p *Pass) markPhase(n *wfv1.NodeStatus, phase wfv1.NodePhase, message string) *wfv1.NodeStatus {
	if n.Phase == phase && n.Message == message {
		return n
	}
	n.Phase = phase
	n.Message = message
	if phase.Completed() && n.FinishedAt.IsZero() {
		n.FinishedAt = p.now()
	}
	p.setNode(n)
	if phase == wfv1.NodeSucceeded {
		// Outputs are final once a node succeeds (a pod's only after its task result is in).
		publishGlobalOutputs(p.WF, n.Outputs)
	}
	if phase.Completed() {
		p.Events = append(p.Events, nodeEvent(n))
	}
	return n
}

func (p *Pass) addChild(parent *wfv1.NodeStatus, childID string) {
	for _, c := range parent.Children {
		if c == childID {
			return
		}
	}
	parent.Children = append(parent.Children, childID)
	p.setNode(parent)
}

// fulfilled is "terminal AND result synced": the only condition successors may start on — with one
// documented exception to the task-result gate, argo's: a daemoned node (a daemon template's pod running
// and ready) counts as done for its successors while it runs, before any result. Its successors cannot
// read its outputs (argo's validation rejects references to a daemon's outputs), so nothing they use can
// be incomplete; the daemon node itself still never becomes Succeeded before its result is complete
// (assessStoppedDaemon), and the workflow completes only after every daemon settled (stopDaemons).
// The assess phase uses the strict gate (settled) so it keeps watching a daemon's pod.
func fulfilled(n *wfv1.NodeStatus) bool {
	return settled(n) || daemoned(n) && n.Phase == wfv1.NodeRunning
}

func nodeEvent(n *wfv1.NodeStatus) Event {
	switch n.Phase {
	case wfv1.NodeSucceeded:
		return Event{Reason: ReasonNodeSucceeded, Message: "Succeeded node " + n.Name}
	case wfv1.NodeSkipped:
		return Event{Reason: ReasonNodeSkipped, Message: withMessage("Skipped node "+n.Name, n.Message)}
	case wfv1.NodeOmitted:
		return Event{Reason: ReasonNodeOmitted, Message: withMessage("Omitted node "+n.Name, n.Message)}
	case wfv1.NodeFailed:
		return Event{Warning: true, Reason: ReasonNodeFailed, Message: withMessage("Failed node "+n.Name, n.Message)}
	default:
		return Event{Warning: true, Reason: ReasonNodeError, Message: withMessage("Error node "+n.Name, n.Message)}
	}
}

func withMessage(s, msg string) string {
	if msg == "" {
		return s
	}
	return s + ": " + msg
}

// Event reasons, one per outcome (argo's WorkflowNode* and Workflow* reasons).
const (
	ReasonNodeSucceeded      = "WorkflowNodeSucceeded"
	ReasonNodeFailed         = "WorkflowNodeFailed"
	ReasonNodeError          = "WorkflowNodeError"
	ReasonNodeSkipped        = "WorkflowNodeSkipped"
	ReasonNodeOmitted        = "WorkflowNodeOmitted"
	ReasonWorkflowRunning    = "WorkflowRunning"
	ReasonWorkflowSucceeded  = "WorkflowSucceeded"
	ReasonWorkflowFailed     = "WorkflowFailed"
	ReasonWorkflowInvalid    = "WorkflowInvalidSpec"
	ReasonWorkflowSuspended  = "WorkflowSuspended"
	ReasonNodeWaitingForTask = "WorkflowNodeWaitingForTaskResult"
	ReasonTaskResultTimeout  = taskresult.ReasonTimeout
	// ReasonNodeWaitingForOldPod: a node's pod name is still taken by an earlier same-named workflow's pod.
	ReasonNodeWaitingForOldPod = "WorkflowNodeWaitingForOldPod"
	// ReasonMissingOutputs: a node's finalized result lacks declared outputs; the node errors (I8).
	ReasonMissingOutputs = "WorkflowNodeMissingOutputs"
	// ReasonPVCDeleteFailed: a completed workflow's volume claim could not be deleted (it stays in status).
	ReasonPVCDeleteFailed = "WorkflowPVCDeleteFailed"
)
