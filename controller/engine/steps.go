package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// executeSteps runs the step groups of a steps template in order; group i+1 starts only when every step
// of group i is fulfilled (terminal and result synced).
func (e *Engine) executeSteps(ctx context.Context, p *Pass, node *wfv1.NodeStatus, tmpl *wfv1.Template) (*wfv1.NodeStatus, error) {
	tmplJSON, _ := json.Marshal(tmpl)
	globals := globalParams(p.WF)
	sc := scope{}.withInputs(tmpl)
	for i, group := range tmpl.Steps {
		sgName := fmt.Sprintf("%s[%d]", node.Name, i)
		sg := p.node(sgName)
		if sg == nil {
			sg = p.newNode(sgName, fmt.Sprintf("[%d]", i), wfv1.NodeTypeStepGroup, "", node.ID, wfv1.NodeRunning, "")
			e.linkStepGroup(p, node, sg, i)
		}
		if !fulfilled(sg) {
			if err := e.executeStepGroup(ctx, p, sg, group.Steps, sc, globals, node.ID, string(tmplJSON)); err != nil {
				return nil, err
			}
			sg = p.node(sgName)
		}
		if !fulfilled(sg) {
			return p.node(node.Name), nil
		}
		if sg.FailedOrError() {
			return p.markPhase(p.node(node.Name), wfv1.NodeFailed, sg.Message), nil
		}
		for _, step := range group.Steps {
			if child := p.node(sgName + "." + step.Name); child != nil {
				sc.addNode("steps."+step.Name, child)
			}
		}
	}
	node = p.node(node.Name)
	outputs, err := templateOutputs(tmpl, sc, globals)
	if err != nil {
		return p.markPhase(node, wfv1.NodeError, err.Error()), nil
	}
	node.Outputs = outputs
	return p.markPhase(node, wfv1.NodeSucceeded, ""), nil
}

// linkStepGroup connects group i to the steps node (i = 0) or to every node of group i-1, as argo draws it.
func (e *Engine) linkStepGroup(p *Pass, stepsNode, sg *wfv1.NodeStatus, i int) {
	if i == 0 {
		p.addChild(p.node(stepsNode.Name), sg.ID)
		return
	}
	prev := p.node(fmt.Sprintf("%s[%d]", stepsNode.Name, i-1))
	if prev == nil {
		return
	}
	if len(prev.Children) == 0 {
		p.addChild(prev, sg.ID)
		return
	}
	for _, childID := range prev.Children {
		if child := p.nodeByID(childID); child != nil {
			p.addChild(child, sg.ID)
		}
	}
}

// executeStepGroup starts the parallel steps of one group and decides the group once all are fulfilled.
func (e *Engine) executeStepGroup(ctx context.Context, p *Pass, sg *wfv1.NodeStatus, steps []wfv1.WorkflowStep,
	sc scope, globals common.Parameters, boundaryID, tmplJSON string) error {
	// Resolve the whole group before starting any of it, so a bad reference never leaves a sibling running
	// under a group that already failed.
	resolvedSteps := make([]*wfv1.WorkflowStep, len(steps))
	for i := range steps {
		r, err := resolveJSON(&steps[i], globals, sc)
		if err != nil {
			p.markPhase(p.node(sg.Name), wfv1.NodeError, err.Error())
			return nil
		}
		resolvedSteps[i] = r
	}
	allFulfilled := true
	for i, step := range steps {
		childName := sg.Name + "." + step.Name
		child := p.node(childName)
		if fulfilled(child) {
			continue
		}
		resolved := resolvedSteps[i]
		if child == nil {
			proceed, err := evalWhen(resolved.When)
			if err != nil {
				e.failStep(p, sg, childName, step, boundaryID, err.Error())
				return nil
			}
			if !proceed {
				skipped := p.newNode(childName, step.Name, wfv1.NodeTypeSkipped, step.Template, boundaryID, wfv1.NodeSkipped,
					fmt.Sprintf("when '%s' evaluated false", resolved.When))
				p.addChild(p.node(sg.Name), skipped.ID)
				p.Events = append(p.Events, nodeEvent(skipped))
				continue
			}
		}
		if resolved.Template == "" {
			e.failStep(p, sg, childName, step, boundaryID,
				fmt.Sprintf("step %s: only local templates are supported (templateRef and inline templates are not yet)", step.Name))
			return nil
		}
		child, err := e.executeTemplate(ctx, p, childName, step.Name, resolved.Template, resolved.Arguments, boundaryID, tmplJSON, false)
		if err != nil {
			var api *apiError
			if errors.As(err, &api) {
				return err
			}
			p.markPhase(p.node(sg.Name), wfv1.NodeError, fmt.Sprintf("step group deemed errored due to child %s error: %v", childName, err))
			return nil
		}
		if child == nil {
			allFulfilled = false
			continue
		}
		p.addChild(p.node(sg.Name), child.ID)
		if !fulfilled(p.node(childName)) {
			allFulfilled = false
		}
	}
	if !allFulfilled {
		return nil
	}
	sg = p.node(sg.Name)
	for _, step := range steps {
		child := p.node(sg.Name + "." + step.Name)
		if child != nil && child.FailedOrError() && !step.ContinuesOn(child.Phase) {
			p.markPhase(sg, wfv1.NodeFailed, fmt.Sprintf("child '%s' failed", child.ID))
			return nil
		}
	}
	p.markPhase(sg, wfv1.NodeSucceeded, "")
	return nil
}

// failStep records a step that cannot run (bad reference, bad `when`) as an errored Skipped-type node and
// errors its group, as argo does.
func (e *Engine) failStep(p *Pass, sg *wfv1.NodeStatus, childName string, step wfv1.WorkflowStep, boundaryID, msg string) {
	child := p.node(childName)
	if child == nil {
		child = p.newNode(childName, step.Name, wfv1.NodeTypeSkipped, step.Template, boundaryID, wfv1.NodeError, msg)
		p.Events = append(p.Events, nodeEvent(child))
	} else {
		p.markPhase(child, wfv1.NodeError, msg)
	}
	sg = p.node(sg.Name)
	p.addChild(sg, child.ID)
	p.markPhase(sg, wfv1.NodeError, msg)
}
