package engine

import (
	"context"
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// executeDAG starts every task whose dependencies are all fulfilled and whose depends expression holds;
// tasks whose expression is false are Omitted. The DAG fails when a task failed and nothing handles it
// (continueOn, or a depends on its .Failed/.Errored/.Completed).
func (e *Engine) executeDAG(ctx context.Context, p *Pass, node *wfv1.NodeStatus, tmpl *wfv1.Template) (*wfv1.NodeStatus, error) {
	tmplJSON, _ := json.Marshal(tmpl)
	globals := globalParams(p.WF)
	taskNode := func(task string) *wfv1.NodeStatus { return p.node(node.Name + "." + task) }
	exprs := map[string]dependsExpr{}
	for i := range tmpl.DAG.Tasks {
		t := &tmpl.DAG.Tasks[i]
		expr, err := dependsOf(t)
		if err != nil {
			return p.markPhase(p.node(node.Name), wfv1.NodeError, fmt.Sprintf("task %s: %v", t.Name, err)), nil
		}
		exprs[t.Name] = expr
	}
	phaseOf := func(task string) wfv1.NodePhase {
		if n := taskNode(task); n != nil {
			return n.Phase
		}
		return ""
	}
	// Tasks that become fulfilled within this pass (skipped, omitted, errored) unblock others at once.
	for progressed := true; progressed; {
		progressed = false
		sc := scope{}.withInputs(tmpl)
		for _, t := range tmpl.DAG.Tasks {
			if n := taskNode(t.Name); fulfilled(n) {
				sc.addNode("tasks."+t.Name, n)
			}
		}
		for _, t := range tmpl.DAG.Tasks {
			name := node.Name + "." + t.Name
			existing := taskNode(t.Name)
			if fulfilled(existing) {
				continue
			}
			expr := exprs[t.Name]
			var deps []string
			ready := true
			if expr != nil {
				expr.tasks(func(dep, _ string) {
					deps = append(deps, dep)
					if !fulfilled(taskNode(dep)) {
						ready = false
					}
				})
			}
			if !ready {
				continue
			}
			link := func(childID string) {
				if len(deps) == 0 {
					p.addChild(p.node(node.Name), childID)
					return
				}
				for _, d := range deps {
					if dn := taskNode(d); dn != nil {
						p.addChild(dn, childID)
					}
				}
			}
			if existing == nil && expr != nil && !expr.eval(phaseOf) {
				omitted := p.newNode(name, t.Name, wfv1.NodeTypeSkipped, t.Template, node.ID, wfv1.NodeOmitted, "omitted: depends condition not met")
				link(omitted.ID)
				p.Events = append(p.Events, nodeEvent(omitted))
				progressed = true
				continue
			}
			resolved, err := resolveJSON(&t, globals, sc)
			if err == nil && resolved.Template == "" {
				err = fmt.Errorf("only local templates are supported (templateRef and inline templates are not yet)")
			}
			var proceed bool
			if err == nil {
				proceed, err = evalWhen(resolved.When)
			}
			if err != nil {
				msg := fmt.Sprintf("task %s: %v", t.Name, err)
				if existing == nil {
					bad := p.newNode(name, t.Name, wfv1.NodeTypeSkipped, t.Template, node.ID, wfv1.NodeError, msg)
					link(bad.ID)
					p.Events = append(p.Events, nodeEvent(bad))
				} else {
					p.markPhase(existing, wfv1.NodeError, msg)
				}
				progressed = true
				continue
			}
			if existing == nil && !proceed {
				skipped := p.newNode(name, t.Name, wfv1.NodeTypeSkipped, t.Template, node.ID, wfv1.NodeSkipped,
					fmt.Sprintf("when '%s' evaluated false", resolved.When))
				link(skipped.ID)
				p.Events = append(p.Events, nodeEvent(skipped))
				progressed = true
				continue
			}
			child, err := e.executeTemplate(ctx, p, name, t.Name, resolved.Template, resolved.Arguments, node.ID, string(tmplJSON), false)
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", name, err)
			}
			if child == nil {
				continue
			}
			link(child.ID)
			if fulfilled(p.node(name)) {
				progressed = true
			}
		}
	}
	return e.assessDAG(p, node.Name, tmpl, exprs, globals)
}

// assessDAG completes the DAG node once every task is fulfilled.
func (e *Engine) assessDAG(p *Pass, dagName string, tmpl *wfv1.Template, exprs map[string]dependsExpr, globals map[string]string) (*wfv1.NodeStatus, error) {
	node := p.node(dagName)
	sc := scope{}.withInputs(tmpl)
	for _, t := range tmpl.DAG.Tasks {
		n := p.node(dagName + "." + t.Name)
		if !fulfilled(n) {
			return node, nil
		}
		sc.addNode("tasks."+t.Name, n)
	}
	for _, t := range tmpl.DAG.Tasks {
		n := p.node(dagName + "." + t.Name)
		if !n.FailedOrError() || t.ContinuesOn(n.Phase) {
			continue
		}
		handled := false
		for _, other := range tmpl.DAG.Tasks {
			if expr := exprs[other.Name]; expr != nil && handlesFailure(expr, t.Name) {
				handled = true
			}
		}
		if !handled {
			return p.markPhase(node, wfv1.NodeFailed, fmt.Sprintf("child '%s' failed", n.ID)), nil
		}
	}
	outputs, err := templateOutputs(tmpl, sc, globals)
	if err != nil {
		return p.markPhase(node, wfv1.NodeError, err.Error()), nil
	}
	node.Outputs = outputs
	return p.markPhase(node, wfv1.NodeSucceeded, ""), nil
}
