package engine

import (
	"context"
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// templateExecutor runs one kind of template as a call's node. n is the node as stored, nil before the
// executor creates it. A new kind of template is one executor in a file of its own and one row in
// executors.
type templateExecutor interface {
	run(ctx context.Context, e *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error)
}

// executors are the template kinds wfguard runs, each with the field a manifest sets it by (argo's), the
// type of the node that runs it and its executor. A kind without a row is refused when its workflow starts
// (unsupportedInTemplate) and errors its node if reached anyway (unrunnable).
var executors = []executorRow{
	{wfv1.TemplateTypeContainer, "container", wfv1.NodeTypePod, podTemplate{}},
	{wfv1.TemplateTypeContainerSet, "containerSet", wfv1.NodeTypePod, podTemplate{}},
	{wfv1.TemplateTypeScript, "script", wfv1.NodeTypePod, podTemplate{}},
	{wfv1.TemplateTypeResource, "resource", wfv1.NodeTypePod, podTemplate{}},
	{wfv1.TemplateTypeData, "data", wfv1.NodeTypePod, podTemplate{}},
	{wfv1.TemplateTypeSuspend, "suspend", wfv1.NodeTypeSuspend, suspendTemplate{}},
	{wfv1.TemplateTypeSteps, "steps", wfv1.NodeTypeSteps, stepsTemplate{}},
	{wfv1.TemplateTypeDAG, "dag", wfv1.NodeTypeDAG, dagTemplate{}},
}

type executorRow struct {
	kind     wfv1.TemplateType
	field    string
	nodeType wfv1.NodeType
	executor templateExecutor
}

func executorOf(kind wfv1.TemplateType) (templateExecutor, bool) {
	for _, x := range executors {
		if x.kind == kind {
			return x.executor, true
		}
	}
	return nil, false
}

// nodeTypeOf is the type of the node that runs t (Pod for a kind without an executor: it errors as one).
func nodeTypeOf(t *wfv1.Template) wfv1.NodeType {
	for _, x := range executors {
		if x.kind == t.GetType() {
			return x.nodeType
		}
	}
	return wfv1.NodeTypePod
}

// runExecutor is the last step of executeTemplate: the template kind's executor runs the node. A kind
// without one errors the node, naming the kinds wfguard runs.
func (e *Engine) runExecutor(ctx context.Context, c *nodeCall) stepResult {
	n := c.node()
	x, ok := executorOf(c.resolved.GetType())
	if !ok {
		return finish(unrunnable(c, n), nil)
	}
	return finish(x.run(ctx, e, c, n))
}

// unrunnable errors the node of a template kind no executor runs.
func unrunnable(c *nodeCall, n *wfv1.NodeStatus) *wfv1.NodeStatus {
	msg := fmt.Sprintf("template %q is of type %q, which wfguard does not run yet (supported: %s)", c.written.Name, c.resolved.GetType(), runnableKinds())
	if n != nil {
		return c.p.markPhase(n, wfv1.NodeError, msg)
	}
	n = c.p.newNode(nodeAt{c.name, c.display, c.written.Name, c.boundaryID}, wfv1.NodeTypePod, wfv1.NodeError, msg)
	c.p.Events = append(c.p.Events, nodeEvent(n))
	return n
}

// runnableKinds lists the kinds executors runs, by their manifest field.
func runnableKinds() string {
	fields := make([]string, 0, len(executors))
	for _, x := range executors {
		fields = append(fields, x.field)
	}
	return strings.Join(fields, ", ")
}

// scopeNode is the node of a steps or DAG call, created Running (with its inputs) when n is nil.
func (c *nodeCall) scopeNode(n *wfv1.NodeStatus, typ wfv1.NodeType) *wfv1.NodeStatus {
	if n != nil {
		return n
	}
	n = c.p.newNode(nodeAt{c.name, c.display, c.written.Name, c.boundaryID}, typ, wfv1.NodeRunning, "")
	n.Inputs = inputsOf(c.resolved)
	c.p.setNode(n)
	return n
}
