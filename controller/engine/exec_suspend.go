package engine

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/taskresult"
)

// suspendTemplate runs a suspend template: its node stays Running until its duration passes or an action
// resumes it.
type suspendTemplate struct{}

func (suspendTemplate) run(_ context.Context, e *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error) {
	return e.executeSuspend(c, n), nil
}

// executeSuspend keeps a Suspend node Running until its duration passes (or a resume marks it done).
func (e *Engine) executeSuspend(c *nodeCall, n *wfv1.NodeStatus) *wfv1.NodeStatus {
	p, tmpl := c.p, c.resolved
	if n == nil {
		n = p.newNode(nodeAt{c.name, c.display, tmpl.Name, c.boundaryID}, wfv1.NodeTypeSuspend, wfv1.NodeRunning, "")
		n.Inputs = inputsOf(tmpl)
		n.Outputs = suppliedOutputs(tmpl)
		p.setNode(n)
		p.Events = append(p.Events, Event{Reason: ReasonWorkflowSuspended, Message: "Suspended node " + c.name})
	}
	if n.Phase.Completed() || tmpl.Suspend == nil || tmpl.Suspend.Duration == "" {
		return n
	}
	d, err := wfv1.ParseStringToDuration(tmpl.Suspend.Duration)
	if err != nil {
		return p.markPhase(n, wfv1.NodeError, fmt.Sprintf("invalid suspend duration %q: %v", tmpl.Suspend.Duration, err))
	}
	until := n.StartedAt.Add(d)
	if !p.Now.Before(until) {
		// Expired: as after a plain resume, each output nobody supplied takes its default (argo's rule).
		outputs, err := taskresult.ApplySuppliedDefaults(n.Outputs)
		if err != nil {
			return p.markPhase(n, wfv1.NodeError, err.Error())
		}
		n.Outputs = outputs
		return p.markPhase(n, wfv1.NodeSucceeded, "")
	}
	p.requeueBy(until)
	return n
}
