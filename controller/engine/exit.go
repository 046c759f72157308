package engine

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/podspec"
)

// runWorkflowExitHandler runs spec.onExit (or spec.hooks.exit) once the entrypoint node is fulfilled, as
// node NAME.onExit. It reports whether the workflow may complete: no handler, the handler is fulfilled,
// or it must not run (a Terminate skips exit handlers; a Stop runs them).
func (e *Engine) runWorkflowExitHandler(ctx context.Context, p *Pass, root *wfv1.NodeStatus) (*wfv1.NodeStatus, bool, error) {
	hook := p.WF.Spec.GetExitHook(p.WF.Spec.Arguments)
	if hook == nil {
		return nil, true, nil
	}
	name := p.WF.Name + ".onExit"
	n := p.node(name)
	if n == nil && !shutdown(p).ShouldExecute(true) {
		return nil, true, nil
	}
	p.extraGlobals = statusGlobals(p, root)
	p.exiting = true
	defer func() { p.extraGlobals, p.exiting = nil, false }()
	n, err := e.executeTemplate(ctx, &nodeCall{p: p, name: name, display: name, call: templateCall{name: hook.Template, ref: hook.TemplateRef}, args: hook.Arguments, opts: execOpts{onExit: true, flag: &wfv1.NodeFlag{Hooked: true}}})
	if err = recordedOnNode(err); err != nil {
		return nil, false, err
	}
	return n, n != nil && fulfilled(n), nil
}

// failedNode is one entry of {{workflow.failures}}, in argo's shape.
type failedNode struct {
	DisplayName  string      `json:"displayName"`
	Message      string      `json:"message"`
	TemplateName string      `json:"templateName"`
	Phase        string      `json:"phase"`
	PodName      string      `json:"podName"`
	FinishedAt   metav1.Time `json:"finishedAt"`
}

// statusGlobals are {{workflow.status}} (from the entrypoint node: as the workflow stands, or will end) and
// {{workflow.failures}} (a JSON list of failed and errored nodes, quoted as argo quotes it), as exit
// handlers and workflow-level hooks see them.
func statusGlobals(p *Pass, root *wfv1.NodeStatus) map[string]string {
	status := map[wfv1.NodePhase]wfv1.WorkflowPhase{
		wfv1.NodePending: wfv1.WorkflowPending, wfv1.NodeRunning: wfv1.WorkflowRunning,
		wfv1.NodeSucceeded: wfv1.WorkflowSucceeded, wfv1.NodeSkipped: wfv1.WorkflowSucceeded, wfv1.NodeOmitted: wfv1.WorkflowSucceeded,
		wfv1.NodeFailed: wfv1.WorkflowFailed, wfv1.NodeError: wfv1.WorkflowError,
	}[root.Phase]
	failures := []failedNode{}
	var names []string
	for id, n := range p.WF.Status.Nodes {
		if n.Phase == wfv1.NodeFailed || n.Phase == wfv1.NodeError {
			names = append(names, id)
		}
	}
	sort.Slice(names, func(i, j int) bool { return p.WF.Status.Nodes[names[i]].Name < p.WF.Status.Nodes[names[j]].Name })
	for _, id := range names {
		n := p.WF.Status.Nodes[id]
		failures = append(failures, failedNode{
			DisplayName: n.DisplayName, Message: n.Message, TemplateName: n.TemplateName, Phase: string(n.Phase),
			PodName: podspec.PodName(p.WF.Name, n.Name, n.TemplateName, n.ID), FinishedAt: n.FinishedAt,
		})
	}
	data, _ := json.Marshal(failures)
	return map[string]string{"workflow.status": string(status), "workflow.failures": strconv.Quote(string(data))}
}
