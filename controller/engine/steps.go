package engine

import (
	"context"
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// executeSteps runs the step groups of a steps template in order; group i+1 starts only when every step
// of group i is fulfilled (terminal and result synced).
func (e *Engine) executeSteps(ctx context.Context, p *Pass, node *wfv1.NodeStatus, tmpl *wfv1.Template) (*wfv1.NodeStatus, error) {
	tmplJSON, _ := json.Marshal(tmpl)
	globals := common.Parameters(p.globals())
	sc := scope{}.withInputs(tmpl)
	for i, group := range tmpl.Steps {
		sgName := fmt.Sprintf("%s[%d]", node.Name, i)
		sg := p.node(sgName)
		if sg == nil {
			sg = p.newNode(nodeAt{sgName, fmt.Sprintf("[%d]", i), "", node.ID}, wfv1.NodeTypeStepGroup, wfv1.NodeRunning, "")
			e.linkStepGroup(p, node, sg, i)
		}
		if !fulfilled(sg) {
			g := &stepGroup{p: p, name: sgName, steps: group.Steps, sc: sc, arts: artifactResolver{p: p, sc: sc, inputs: tmpl},
				globals: globals, boundaryID: node.ID, tmplJSON: string(tmplJSON)}
			if err := e.executeStepGroup(ctx, g); err != nil {
				return nil, err
			}
			sg = p.node(sgName)
		}
		if !fulfilled(sg) {
			return p.node(node.Name), nil
		}
		if sg.FailedOrError() {
			p.setOutbound(node.Name, lastStepGroupChildren(p, node.Name, len(tmpl.Steps)))
			return p.markPhase(p.node(node.Name), wfv1.NodeFailed, sg.Message), nil
		}
		for _, step := range group.Steps {
			name := sgName + "." + step.Name
			if child := p.node(name); child != nil {
				sc.addNode("steps."+step.Name, child)
			} else if iterations := loopChildren(p, name, node.ID); len(iterations) > 0 {
				sc.addAggregate("steps."+step.Name, iterations) // fan-in of a loop
			}
		}
	}
	p.setOutbound(node.Name, lastStepGroupChildren(p, node.Name, len(tmpl.Steps)))
	node = p.node(node.Name)
	outputs, err := templateOutputs(tmpl, sc, globals, artifactResolver{p: p, sc: sc, inputs: tmpl})
	if err != nil {
		return p.markPhase(node, wfv1.NodeError, err.Error()), nil
	}
	node.Outputs = outputs
	return p.markPhase(node, wfv1.NodeSucceeded, ""), nil
}

// lastStepGroupChildren are the children of the last step group of the steps node named name that was
// started: the nodes its outbound nodes come from.
func lastStepGroupChildren(p *Pass, name string, groups int) []string {
	for i := groups - 1; i >= 0; i-- {
		if sg, ok := p.peekNode(fmt.Sprintf("%s[%d]", name, i)); ok {
			return sg.Children
		}
	}
	return nil
}

// linkStepGroup connects group i to the steps node (i = 0) or to the outbound nodes of every node of group
// i-1, as argo draws it.
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
		for _, id := range p.outboundNodes(childID) {
			if out := p.nodeByID(id); out != nil {
				p.addChild(out, sg.ID)
			}
		}
	}
}

// stepRun is one child of a step group: a step, or one iteration of a step's loop.
type stepRun struct {
	name     string             // the child's name in the group: the step's, or name(i:item)
	step     *wfv1.WorkflowStep // as written (continueOn, template)
	resolved *wfv1.WorkflowStep // parameters and the item substituted
}

// stepGroup is one group of a steps template as it runs: its node, its steps as written, and what they
// resolve against.
type stepGroup struct {
	p     *Pass
	name  string // the group's node
	steps []wfv1.WorkflowStep
	sc    scope
	arts  artifactResolver
	// globals are the workflow's parameters.
	globals common.Parameters
	// boundaryID is the steps node; tmplJSON its template, which a step's outputs.result may be read by.
	boundaryID, tmplJSON string
}

// stepState is where one step of a group stands after the pass ran it.
type stepState int

const (
	stepDone    stepState = iota // fulfilled, or skipped by its `when`
	stepWaiting                  // running, held back, or not done with its hooks
	groupEnded                   // the step errored the whole group
)

// expandStepGroup resolves every step of a group and expands loops into their iterations. An empty loop
// is recorded as a Skipped node; an error (a bad reference, a `when` that cannot be evaluated, a withParam
// that is not a JSON list) is returned for the group.
func (e *Engine) expandStepGroup(g *stepGroup) ([]stepRun, error) {
	steps, globals, sc := g.steps, g.globals, g.sc
	resolved, err := resolveStepGroup(steps, sc, g.arts, globals)
	if err != nil {
		return nil, err
	}
	var runs []stepRun
	for i := range steps {
		step, r := &steps[i], resolved[i]
		l := loop{r.WithItems, r.WithParam, r.WithSequence}
		if !l.set() {
			runs = append(runs, stepRun{step.Name, step, r})
			continue
		}
		items, err := l.expand(r.When)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", step.Name, err)
		}
		if len(items) == 0 {
			e.skipEmptyLoop(g, step)
			continue
		}
		r.WithItems, r.WithParam, r.WithSequence = nil, "", nil
		env := mergeParams(globals, sc)
		for j, item := range items {
			x, err := substituteItem(r, j, item, env, r.When)
			if err != nil {
				return nil, err // argo's message as is: "failed to resolve {{item.x}}"
			}
			x.Name = loopChildName(step.Name, j, item)
			runs = append(runs, stepRun{x.Name, step, x})
		}
	}
	return runs, nil
}

// resolveStepGroup is argo's reference resolution of a group: every step's parameters substituted and
// its `when` checked. Argo resolves the steps concurrently and reports the first error to arrive, which
// in practice is the last failing step's (the newest goroutine runs first), so that is the one reported.
//
//nolint:staticcheck // ST1005: argo's message starts with a capital
func resolveStepGroup(steps []wfv1.WorkflowStep, sc scope, arts artifactResolver, globals map[string]string) ([]*wfv1.WorkflowStep, error) {
	out := make([]*wfv1.WorkflowStep, len(steps))
	var last error
	for i := range steps {
		r, err := resolveStep(&steps[i], sc, arts, globals)
		if err != nil {
			last = err
			continue
		}
		out[i] = r
	}
	if last != nil {
		return nil, fmt.Errorf("Failed to resolve references: %w", last)
	}
	return out, nil
}

// resolveStep substitutes a step's parameters and, unless it will not run, resolves its argument
// artifacts. A `when` that cannot be evaluated is an error, except in a loop: there it may name {{item}},
// and each iteration's `when` is evaluated after expansion.
func resolveStep(step *wfv1.WorkflowStep, sc scope, arts artifactResolver, globals map[string]string) (*wfv1.WorkflowStep, error) {
	r, err := resolveJSON(step, globals, sc)
	if err != nil {
		return nil, err
	}
	loops := r.ShouldExpand()
	if _, err := evalWhen(r.When); err != nil && !loops {
		return nil, err
	}
	if err := resolveStepArtifacts(arts, r.When, loops, &r.Arguments); err != nil {
		return nil, fmt.Errorf("unable to resolve references: %s", err) // argo's message
	}
	return r, nil
}

// skipEmptyLoop records a loop over no items as a Skipped node, as argo does.
func (e *Engine) skipEmptyLoop(g *stepGroup, step *wfv1.WorkflowStep) {
	childName := g.name + "." + step.Name
	if g.p.node(childName) != nil {
		return
	}
	g.skip(nodeAt{childName, step.Name, step.Template, g.boundaryID}, "Skipped, empty params")
}

// skip records a child of the group that does not run as a Skipped node.
func (g *stepGroup) skip(at nodeAt, message string) {
	skipped := g.p.newNode(at, wfv1.NodeTypeSkipped, wfv1.NodeSkipped, message)
	g.p.addChild(g.p.node(g.name), skipped.ID)
	g.p.Events = append(g.p.Events, nodeEvent(skipped))
}

// executeStepGroup starts the parallel steps of one group and decides the group once all are fulfilled.
func (e *Engine) executeStepGroup(ctx context.Context, g *stepGroup) error {
	p := g.p
	// Resolve the whole group before starting any of it, so a bad reference never leaves a sibling running
	// under a group that already failed.
	runs, err := e.expandStepGroup(g)
	if err != nil {
		p.markPhase(p.node(g.name), wfv1.NodeError, err.Error())
		return nil
	}
	allFulfilled := true
	for _, run := range runs {
		state, err := e.runStep(ctx, g, run)
		if err != nil || state == groupEnded {
			return err
		}
		allFulfilled = allFulfilled && state == stepDone
	}
	state, err := e.stepHooksDone(ctx, g, runs)
	if err != nil || state == groupEnded || !allFulfilled || state == stepWaiting {
		return err
	}
	sg := p.node(g.name)
	for _, run := range runs {
		child := p.node(g.name + "." + run.name)
		if child != nil && child.FailedOrError() && !run.step.ContinuesOn(child.Phase) {
			p.markPhase(sg, wfv1.NodeFailed, fmt.Sprintf("child '%s' failed", child.ID))
			return nil
		}
	}
	p.markPhase(sg, wfv1.NodeSucceeded, "")
	return nil
}

// runStep starts (or drives on) one step of the group. A new step waits while the pass has created its
// share of nodes; one whose `when` is false is skipped; one that cannot run errors the group.
func (e *Engine) runStep(ctx context.Context, g *stepGroup, run stepRun) (stepState, error) {
	p, resolved := g.p, run.resolved
	childName := g.name + "." + run.name
	child := p.node(childName)
	if fulfilled(child) {
		return stepDone, nil
	}
	if child == nil {
		if p.budgetSpent() {
			return stepWaiting, nil // a later pass starts it
		}
		proceed, err := evalWhen(resolved.When)
		if err != nil {
			e.failStep(g, run, err.Error())
			return groupEnded, nil
		}
		if !proceed {
			g.skip(nodeAt{childName, run.name, run.step.Template, g.boundaryID}, fmt.Sprintf("when '%s' evaluated false", resolved.When))
			return stepDone, nil
		}
	}
	child, err := e.executeTemplate(ctx, &nodeCall{p: p, name: childName, display: run.name,
		call: templateCall{name: resolved.Template, ref: resolved.TemplateRef, inline: resolved.Inline},
		args: resolved.Arguments, boundaryID: g.boundaryID, parentJSON: g.tmplJSON})
	if err != nil {
		if abortsPass(err) {
			return groupEnded, err
		}
		if child != nil {
			p.addChild(p.node(g.name), child.ID)
		}
		p.markPhase(p.node(g.name), wfv1.NodeError, fmt.Sprintf("step group deemed errored due to child %s error: %v", childName, err))
		return groupEnded, nil
	}
	if child == nil {
		return stepWaiting, nil
	}
	p.addChild(p.node(g.name), child.ID)
	if !p.nodeFulfilled(childName) {
		return stepWaiting, nil
	}
	return stepDone, nil
}

// stepHooksDone runs the hooks of the group's steps: a step is done once its hooks are, and the next group
// waits for them. Like argo, the steps are taken in order, and one whose lifecycle hooks are not done holds
// the hooks of the steps after it.
func (e *Engine) stepHooksDone(ctx context.Context, g *stepGroup, runs []stepRun) (stepState, error) {
	p := g.p
	state := stepDone
	for _, run := range runs {
		child := p.node(g.name + "." + run.name)
		if child == nil {
			continue
		}
		done, err := e.stepLifecycleHooksDone(ctx, p, run, child, g.boundaryID, g.sc)
		if err != nil {
			return groupEnded, stepGroupHookError(p, g.name, err, "")
		}
		if !done {
			return stepWaiting, nil
		}
		if !run.step.HasExitHook() {
			continue
		}
		done, err = e.exitHookDone(ctx, p, stepExitHook(p, run.resolved), hookSite{child, g.boundaryID, "steps." + run.step.Name, g.sc})
		if err != nil {
			return groupEnded, stepGroupHookError(p, g.name, err, child.Name+".onExit")
		}
		if !done {
			state = stepWaiting
		}
	}
	return state, nil
}

// stepLifecycleHooksDone runs the lifecycle hooks of one step (or loop iteration) on its node. A step that
// did not run (its `when` was false, its loop empty) has none, as under argo.
func (e *Engine) stepLifecycleHooksDone(ctx context.Context, p *Pass, run stepRun, child *wfv1.NodeStatus, boundaryID string, sc scope) (bool, error) {
	if child.Type == wfv1.NodeTypeSkipped || !hasLifecycleHooks(run.resolved.Hooks) {
		return true, nil
	}
	// argo names the node by the step as run: an iteration's hooks see steps.NAME(i:item).status.
	return e.lifecycleHooksDone(ctx, p, run.resolved.Hooks, hookSite{child, boundaryID, "steps." + child.DisplayName, sc})
}

// stepGroupHookError ends a group whose step's hook could not run: a transient API error retries the
// pass; anything else errors the group, naming the exit handler when it was one (argo's wording).
func stepGroupHookError(p *Pass, group string, err error, exitHandler string) error {
	if abortsPass(err) {
		return err
	}
	msg := err.Error()
	if exitHandler != "" {
		msg = fmt.Sprintf("step group deemed errored due to child %s error: %v", exitHandler, err)
	}
	p.markPhase(p.node(group), wfv1.NodeError, msg)
	return nil
}

// failStep records a step that cannot run (bad reference, bad `when`) as an errored Skipped-type node and
// errors its group, as argo does.
func (e *Engine) failStep(g *stepGroup, run stepRun, msg string) {
	p := g.p
	childName := g.name + "." + run.name
	child := p.node(childName)
	if child == nil {
		child = p.newNode(nodeAt{childName, run.name, run.step.Template, g.boundaryID}, wfv1.NodeTypeSkipped, wfv1.NodeError, msg)
		p.Events = append(p.Events, nodeEvent(child))
	} else {
		p.markPhase(child, wfv1.NodeError, msg)
	}
	sg := p.node(g.name)
	p.addChild(sg, child.ID)
	p.markPhase(sg, wfv1.NodeError, msg)
}
