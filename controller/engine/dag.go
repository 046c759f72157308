package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// executeDAG starts every task whose dependencies are all fulfilled and whose depends expression holds;
// tasks whose expression is false are Omitted. Once every task is fulfilled, the DAG's phase follows argo:
// each leaf task's branch phase (an omitted task inherits its parents'), with continueOn honoured.
func (e *Engine) executeDAG(ctx context.Context, p *Pass, node *wfv1.NodeStatus, tmpl *wfv1.Template) (*wfv1.NodeStatus, error) {
	r, err := e.newDAGRun(p, node, tmpl)
	if err != nil {
		return p.markPhase(p.node(node.Name), wfv1.NodeError, err.Error()), nil
	}
	for progressed := true; progressed; {
		var end *wfv1.NodeStatus
		if progressed, end, err = r.sweep(ctx); end != nil || err != nil {
			return end, err
		}
	}
	if end, err := r.runHooks(ctx); end != nil || err != nil {
		return end, err
	}
	return e.assessDAG(p, node.Name, tmpl, r.exprs, r.globals)
}

// dagRun is one pass's walk of a DAG: its tasks, their depends expressions, which of them run, and the
// scope their arguments resolve in, rebuilt as tasks complete.
type dagRun struct {
	e        *Engine
	p        *Pass
	node     *wfv1.NodeStatus
	tmpl     *wfv1.Template
	tmplJSON string
	globals  map[string]string
	tasks    map[string]*wfv1.DAGTask
	exprs    map[string]dependsExpr
	runs     map[string]bool
	// completions counts the tasks fulfilled during this pass (skipped, omitted, errored, done): each may
	// unblock others at once, and its outputs join the scope.
	completions int
	sc          scope
	scopeAt     int // completions when sc was built
	// revisited marks the daemoned retried tasks visited this pass. Such a task counts as done but is
	// visited once a pass, as argo pre-executes daemoned tasks: its attempt may have ended, and then it
	// retries.
	revisited map[string]bool
}

// newDAGRun reads the DAG's tasks and their depends expressions; an error names what is invalid.
func (e *Engine) newDAGRun(p *Pass, node *wfv1.NodeStatus, tmpl *wfv1.Template) (*dagRun, error) {
	tmplJSON, _ := json.Marshal(tmpl)
	r := &dagRun{e: e, p: p, node: node, tmpl: tmpl, tmplJSON: string(tmplJSON), globals: p.globals(),
		tasks: map[string]*wfv1.DAGTask{}, exprs: map[string]dependsExpr{}, revisited: map[string]bool{}}
	for i := range tmpl.DAG.Tasks {
		r.tasks[tmpl.DAG.Tasks[i].Name] = &tmpl.DAG.Tasks[i]
	}
	for _, t := range r.tasks {
		expr, err := dependsOf(t)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.Name, err)
		}
		r.exprs[t.Name] = expr
	}
	runs, err := tasksToRun(tmpl, r.exprs)
	if err != nil {
		return nil, err
	}
	r.runs = runs
	return r, nil
}

// sweep visits, in the template's order, every task that runs and is not yet fulfilled. It reports whether
// a task was fulfilled meanwhile, so that another sweep starts what that unblocked; a non-nil end or err
// ends the DAG's pass with them.
func (r *dagRun) sweep(ctx context.Context) (progressed bool, end *wfv1.NodeStatus, err error) {
	before := r.completions
	r.sc, r.scopeAt = r.e.dagScope(r.p, r.node, r.tmpl), r.completions
	for _, t := range r.tmpl.DAG.Tasks {
		if end, err := r.visit(ctx, t); end != nil || err != nil {
			return false, end, err
		}
	}
	return r.completions != before, nil, nil
}

// visit brings one task forward once its dependencies and their hooks are done: it is omitted (depends
// false), errored (its arguments or when do not resolve), skipped (when false), or its template runs. A
// non-nil end or err ends the DAG's pass with them.
func (r *dagRun) visit(ctx context.Context, t wfv1.DAGTask) (end *wfv1.NodeStatus, err error) {
	p, name := r.p, r.node.Name+"."+t.Name
	seen, ok := p.peekNode(name)
	if ok && fulfilled(&seen) && (!daemonedRetry(&seen) || r.revisited[name]) || !r.runs[t.Name] {
		return nil, nil
	}
	if !ok && p.budgetSpent() {
		return nil, nil // a later pass starts it
	}
	existing := p.node(name)
	if daemonedRetry(existing) {
		r.revisited[name] = true
	}
	if r.completions != r.scopeAt {
		// A task (e.g. a nested steps or DAG) completed earlier in this sweep: its outputs join the scope.
		r.sc, r.scopeAt = r.e.dagScope(p, r.node, r.tmpl), r.completions
	}
	deps, ok := r.dependenciesFulfilled(t.Name)
	if !ok {
		return nil, nil
	}
	if done, end, err := r.dependencyHooksDone(ctx, deps); !done {
		return end, err
	}
	return r.bringForward(ctx, t, existing, deps)
}

// bringForward decides a task whose dependencies are done: omitted, errored, skipped, run as a loop, or
// started.
func (r *dagRun) bringForward(ctx context.Context, t wfv1.DAGTask, existing *wfv1.NodeStatus, deps []string) (end *wfv1.NodeStatus, err error) {
	p, name := r.p, r.node.Name+"."+t.Name
	if expr := r.exprs[t.Name]; existing == nil && expr != nil && !expr.eval(r.state) {
		r.recordNotRun(nodeAt{name, t.Name, t.Template, r.node.ID}, deps, wfv1.NodeOmitted, "omitted: depends condition not met")
		r.completions++
		return nil, nil
	}
	resolved, err := resolveJSON(&t, r.globals, r.sc)
	looped := false
	if err == nil {
		looped = loop{resolved.WithItems, resolved.WithParam, resolved.WithSequence}.set()
		err = resolveStepArtifacts(artifactResolver{p: p, sc: r.sc, inputs: r.tmpl}, resolved.When, looped, &resolved.Arguments)
	}
	if err == nil && looped {
		if err := r.runLoop(ctx, &t, resolved, deps); err != nil {
			return nil, err
		}
		r.countIfFulfilled(name)
		return nil, nil
	}
	var proceed bool
	if err == nil {
		proceed, err = evalWhen(resolved.When)
	}
	if err != nil {
		if existing == nil {
			r.recordNotRun(nodeAt{name, t.Name, t.Template, r.node.ID}, deps, wfv1.NodeError, err.Error())
		} else {
			p.markPhase(existing, wfv1.NodeError, err.Error())
		}
		r.countIfFulfilled(name)
		return nil, nil
	}
	if existing == nil && !proceed {
		r.recordNotRun(nodeAt{name, t.Name, t.Template, r.node.ID}, deps, wfv1.NodeSkipped, fmt.Sprintf("when '%s' evaluated false", resolved.When))
		r.completions++
		return nil, nil
	}
	return r.start(ctx, name, &t, resolved, deps)
}

// dependenciesFulfilled lists a task's dependencies (those its depends expression names) and reports
// whether every one is fulfilled.
func (r *dagRun) dependenciesFulfilled(task string) (deps []string, all bool) {
	all = true
	if expr := r.exprs[task]; expr != nil {
		expr.tasks(func(dep, _ string) {
			deps = append(deps, dep)
			if !r.p.nodeFulfilled(r.node.Name + "." + dep) {
				all = false
			}
		})
	}
	return deps, all
}

// dependencyHooksDone runs the hooks of a task's dependencies in order and reports whether each is done with
// them: a dependency is done once its hooks are (argo's hooks-fulfilled rule). It stops at the first that
// is not, so later dependencies' hooks wait for it. A hook that fails ends the DAG's pass (hookError).
func (r *dagRun) dependencyHooksDone(ctx context.Context, deps []string) (done bool, end *wfv1.NodeStatus, err error) {
	for _, dep := range deps {
		if t := r.tasks[dep]; t == nil || !t.HasExitHook() && !hasLifecycleHooks(t.Hooks) {
			continue
		}
		done, err := r.e.taskHooksDone(ctx, r.p, r.node, r.tasks[dep], r.sc)
		if err != nil {
			end, err := r.e.hookError(r.p, r.node, dep, err)
			return false, end, err
		}
		if !done {
			return false, nil, nil
		}
	}
	return true, nil, nil
}

// state is a task's phase for its dependents' depends expressions (a daemoned task that runs counts as
// daemoned), with its continueOn.
func (r *dagRun) state(task string) (wfv1.NodePhase, *wfv1.ContinueOn) {
	var phase wfv1.NodePhase
	if n, ok := r.p.peekNode(r.node.Name + "." + task); ok {
		phase = n.Phase
		if daemoned(&n) && n.Phase == wfv1.NodeRunning {
			phase = phaseDaemoned
		}
	}
	if t := r.tasks[task]; t != nil {
		return phase, t.ContinueOn
	}
	return phase, nil
}

// linker links a task's node under its dependencies' nodes, or under the DAG's node when it has none.
func (r *dagRun) linker(deps []string) func(childID string) {
	return func(childID string) {
		if len(deps) == 0 {
			r.p.addChild(r.p.node(r.node.Name), childID)
			return
		}
		for _, d := range deps {
			dn, ok := r.p.peekNode(r.node.Name + "." + d)
			if !ok {
				continue
			}
			for _, id := range r.p.outboundNodes(dn.ID) {
				if out := r.p.nodeByID(id); out != nil {
					r.p.addChild(out, childID)
				}
			}
		}
	}
}

// recordNotRun records a task whose template does not run: a Skipped-type node in phase with msg, linked
// under its dependencies, and its event.
func (r *dagRun) recordNotRun(at nodeAt, deps []string, phase wfv1.NodePhase, msg string) {
	n := r.p.newNode(at, wfv1.NodeTypeSkipped, phase, msg)
	r.linker(deps)(n.ID)
	r.p.Events = append(r.p.Events, nodeEvent(n))
}

// countIfFulfilled counts the task among this pass's completions when its node is now fulfilled.
func (r *dagRun) countIfFulfilled(name string) {
	if r.p.nodeFulfilled(name) {
		r.completions++
	}
}

// start runs a task's resolved template and links its node. A template that cannot start errors the
// task's node when it has one (which then records why, e.g. its WorkflowTemplate is gone, as argo does),
// else the DAG's; an API error retries the pass.
func (r *dagRun) start(ctx context.Context, name string, t, resolved *wfv1.DAGTask, deps []string) (*wfv1.NodeStatus, error) {
	p, link := r.p, r.linker(deps)
	child, err := r.e.executeTemplate(ctx, &nodeCall{p: p, name: name, display: t.Name, call: templateCall{name: resolved.Template, ref: resolved.TemplateRef, inline: resolved.Inline}, args: resolved.Arguments, boundaryID: r.node.ID, parentJSON: r.tmplJSON})
	if err != nil {
		if abortsPass(err) {
			return nil, err
		}
		if child == nil {
			return p.markPhase(p.node(r.node.Name), wfv1.NodeError, fmt.Sprintf("task '%s' errored: %v", name, err)), nil
		}
		link(child.ID)
		p.markPhase(p.node(name), wfv1.NodeError, fmt.Sprintf("task '%s' errored: %v", name, err))
		r.completions++
		return nil, nil
	}
	if child == nil {
		return nil, nil
	}
	link(child.ID)
	r.countIfFulfilled(name)
	return nil, nil
}

// runHooks starts the lifecycle hooks due on the DAG's tasks and the exit handlers of its fulfilled tasks
// (leaves included), and holds the DAG open until all are done: it then returns nothing. Otherwise it
// returns the DAG's node as it stands, or a hook's failure (hookError).
func (r *dagRun) runHooks(ctx context.Context) (end *wfv1.NodeStatus, err error) {
	p, node, tmpl := r.p, r.node, r.tmpl
	var sc scope
	hooksDone := true
	if slices.ContainsFunc(tmpl.DAG.Tasks, func(t wfv1.DAGTask) bool { return hasLifecycleHooks(t.Hooks) }) {
		sc = r.e.dagScope(p, node, tmpl)
		done, err := r.e.dagLifecycleHooksDone(ctx, p, node, tmpl, r.exprs, sc)
		if err != nil {
			return r.e.hookError(p, node, "", err)
		}
		hooksDone = done
	}
	for i := range tmpl.DAG.Tasks {
		if !tmpl.DAG.Tasks[i].HasExitHook() {
			continue
		}
		if sc == nil {
			sc = r.e.dagScope(p, node, tmpl)
		}
		done, err := r.e.taskHooksDone(ctx, p, node, &tmpl.DAG.Tasks[i], sc)
		if err != nil {
			return r.e.hookError(p, node, tmpl.DAG.Tasks[i].Name, err)
		}
		if !done && p.nodeFulfilled(node.Name+"."+tmpl.DAG.Tasks[i].Name) {
			return p.node(node.Name), nil
		}
	}
	if !hooksDone {
		return p.node(node.Name), nil
	}
	return nil, nil
}

// taskHooksDone reports whether a task is fulfilled and done with its exit handler (each iteration's, for
// a loop), starting the handler when due.
func (e *Engine) taskHooksDone(ctx context.Context, p *Pass, dagNode *wfv1.NodeStatus, task *wfv1.DAGTask, sc scope) (bool, error) {
	if task == nil {
		return false, nil
	}
	n := p.node(dagNode.Name + "." + task.Name)
	if !fulfilled(n) {
		return false, nil
	}
	if hasLifecycleHooks(task.Hooks) {
		if done, err := e.lifecycleHooksDone(ctx, p, task.Hooks, hookSite{n, dagNode.ID, "tasks." + task.Name, sc}); err != nil || !done {
			return false, err
		}
	}
	hook := taskExitHook(p, task)
	if hook == nil {
		return true, nil
	}
	if n.Type != wfv1.NodeTypeTaskGroup {
		return e.exitHookDone(ctx, p, hook, hookSite{n, dagNode.ID, "tasks." + task.Name, sc})
	}
	all := true
	for _, id := range n.Children {
		iteration := p.nodeByID(id)
		if iteration == nil || iteration.NodeFlag != nil && iteration.NodeFlag.Hooked {
			continue
		}
		done, err := e.exitHookDone(ctx, p, hook, hookSite{iteration, dagNode.ID, "tasks." + task.Name, sc})
		if err != nil {
			return false, err
		}
		all = all && done
	}
	return all, nil
}

// dagLifecycleHooksDone runs the lifecycle hooks of the DAG's tasks that have a node, as argo does: a
// task's once it runs or is fulfilled, a target task's from its creation. It reports whether every hook
// started is fulfilled.
func (e *Engine) dagLifecycleHooksDone(ctx context.Context, p *Pass, dagNode *wfv1.NodeStatus, tmpl *wfv1.Template,
	exprs map[string]dependsExpr, sc scope) (bool, error) {
	targets := targetTasks(tmpl, exprs)
	all := true
	for i := range tmpl.DAG.Tasks {
		t := &tmpl.DAG.Tasks[i]
		if !hasLifecycleHooks(t.Hooks) {
			continue
		}
		n := p.node(dagNode.Name + "." + t.Name)
		if n == nil || !(n.Phase == wfv1.NodeRunning || fulfilled(n) || slices.Contains(targets, t.Name)) {
			continue
		}
		done, err := e.lifecycleHooksDone(ctx, p, t.Hooks, hookSite{n, dagNode.ID, "tasks." + t.Name, sc})
		if err != nil {
			return false, err
		}
		all = all && done
	}
	return all, nil
}

// hookError handles a failed hook: a transient API error retries the pass; anything else errors the DAG,
// naming task's exit handler, or with a lifecycle hook's own error (task ""), which names the hook.
func (e *Engine) hookError(p *Pass, dagNode *wfv1.NodeStatus, task string, err error) (*wfv1.NodeStatus, error) {
	if abortsPass(err) {
		return nil, err
	}
	if task == "" {
		return p.markPhase(p.node(dagNode.Name), wfv1.NodeError, err.Error()), nil
	}
	return p.markPhase(p.node(dagNode.Name), wfv1.NodeError, fmt.Sprintf("task '%s.%s.onExit' errored: %v", dagNode.Name, task, err)), nil
}

// assessDAG completes the DAG node once every task is fulfilled, from the branch phases of its target tasks
// (dag.target, else the leaves: tasks nothing depends on).
func (e *Engine) assessDAG(p *Pass, dagName string, tmpl *wfv1.Template, exprs map[string]dependsExpr, globals map[string]string) (*wfv1.NodeStatus, error) {
	node := p.node(dagName)
	runs, err := tasksToRun(tmpl, exprs)
	if err != nil {
		return p.markPhase(node, wfv1.NodeError, err.Error()), nil
	}
	for _, t := range tmpl.DAG.Tasks {
		if runs[t.Name] && !p.nodeFulfilled(dagName+"."+t.Name) {
			return node, nil
		}
	}
	sc := e.dagScope(p, node, tmpl)
	if shutdown(p).Enabled() {
		p.setOutbound(dagName, targetNodes(p, dagName, tmpl, exprs))
		return p.markPhase(p.node(dagName), wfv1.NodeFailed, ""), nil
	}
	phase := e.dagPhase(p, node, tmpl, exprs)
	if phase == wfv1.NodeRunning {
		return node, nil
	}
	p.setOutbound(dagName, targetNodes(p, dagName, tmpl, exprs))
	node = p.node(dagName)
	if phase != wfv1.NodeSucceeded {
		return p.markPhase(node, phase, ""), nil // argo gives a failed DAG no message of its own
	}
	outputs, err := templateOutputs(tmpl, sc, globals, artifactResolver{p: p, sc: sc, inputs: tmpl})
	if err != nil {
		return p.markPhase(node, wfv1.NodeError, err.Error()), nil
	}
	node.Outputs = outputs
	return p.markPhase(node, wfv1.NodeSucceeded, ""), nil
}

// dagPhase walks the DAG from its roots, carrying each branch's last completed phase down to omitted and
// skipped descendants, and decides from the target tasks' branch phases (failures win; continueOn excuses).
func (e *Engine) dagPhase(p *Pass, dagNode *wfv1.NodeStatus, tmpl *wfv1.Template, exprs map[string]dependsExpr) wfv1.NodePhase {
	targets := targetTasks(tmpl, exprs)
	taskOf := map[string]*wfv1.DAGTask{}
	for i := range tmpl.DAG.Tasks {
		t := &tmpl.DAG.Tasks[i]
		taskOf[p.WF.NodeID(dagNode.Name+"."+t.Name)] = t
	}
	targetPhase := map[string]wfv1.NodePhase{}
	for _, t := range targets {
		targetPhase[p.WF.NodeID(dagNode.Name+"."+t)] = ""
	}
	if !branchPhases(p, dagNode, taskOf, targetPhase) {
		return wfv1.NodeRunning
	}
	failFast := tmpl.DAG.FailFast == nil || *tmpl.DAG.FailFast
	result := wfv1.NodeSucceeded
	for _, t := range targets {
		id := p.WF.NodeID(dagNode.Name + "." + t)
		branch := targetPhase[id]
		switch {
		case branch == "":
			result = wfv1.NodeRunning
			if !failFast {
				return result
			}
		case branch.FailedOrError():
			if task := taskOf[id]; task != nil && task.ContinuesOn(branch) {
				continue
			}
			result = branch
			if failFast {
				return result
			}
		}
	}
	return result
}

// branchPhases walks the DAG's tasks from its roots and records in targetPhase each target task's branch
// phase (a failure, once seen, stays). It reports false when a node it reaches is not yet fulfilled.
func branchPhases(p *Pass, dagNode *wfv1.NodeStatus, taskOf map[string]*wfv1.DAGTask, targetPhase map[string]wfv1.NodePhase) bool {
	type visit struct {
		id    string
		phase wfv1.NodePhase
	}
	seen := map[visit]bool{}
	queue := []visit{}
	for _, c := range dagNode.Children {
		queue = append(queue, visit{c, wfv1.NodeSucceeded})
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		n := p.nodeByID(cur.id)
		if n == nil || !fulfilled(n) {
			return false
		}
		branch := cur.phase
		if n.Phase.Completed() {
			branch = n.Phase
		}
		if prev, isTarget := targetPhase[n.ID]; isTarget && !prev.FailedOrError() {
			targetPhase[n.ID] = branch
		}
		if _, isTask := taskOf[n.ID]; !isTask {
			continue // a task's own subtree (steps, DAG) is summarized by its phase
		}
		for _, c := range taskSuccessors(p, n) {
			if _, childIsTask := taskOf[c]; childIsTask {
				queue = append(queue, visit{c, branch})
			}
		}
	}
	return true
}

// taskSuccessors are the children of a task's node and of its outbound nodes: a task that follows it is
// linked under the latter (argo's graph), e.g. under a retry's last attempt or a loop's iterations.
func taskSuccessors(p *Pass, n *wfv1.NodeStatus) []string {
	out := n.Children
	for _, id := range p.outboundNodes(n.ID) {
		if id == n.ID {
			continue
		}
		if o, ok := p.WF.Status.Nodes[id]; ok {
			out = append(slices.Clip(out), o.Children...)
		}
	}
	return out
}

// targetNodes are the nodes of the DAG's target tasks that exist: where its outbound nodes come from.
func targetNodes(p *Pass, dagName string, tmpl *wfv1.Template, exprs map[string]dependsExpr) []string {
	var ids []string
	for _, t := range targetTasks(tmpl, exprs) {
		if n, ok := p.peekNode(dagName + "." + t); ok {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// targetTasks is dag.target, else every task no other task depends on.
func targetTasks(tmpl *wfv1.Template, exprs map[string]dependsExpr) []string {
	if tmpl.DAG.Target != "" {
		return strings.Fields(tmpl.DAG.Target)
	}
	dependedOn := map[string]bool{}
	for _, expr := range exprs {
		if expr != nil {
			expr.tasks(func(dep, _ string) { dependedOn[dep] = true })
		}
	}
	var out []string
	for _, t := range tmpl.DAG.Tasks {
		if !dependedOn[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// tasksToRun is the tasks a DAG runs: its target tasks and, transitively, what they depend on. Without
// dag.target the targets are the leaves, so every task runs. A target naming no task is argo's
// validation error.
func tasksToRun(tmpl *wfv1.Template, exprs map[string]dependsExpr) (map[string]bool, error) {
	runs := map[string]bool{}
	queue := targetTasks(tmpl, exprs)
	for _, name := range queue {
		if _, ok := exprs[name]; !ok {
			return nil, fmt.Errorf("templates.%s.targets: target '%s' is not defined", tmpl.Name, name)
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if runs[name] {
			continue
		}
		runs[name] = true
		if expr := exprs[name]; expr != nil {
			expr.tasks(func(dep, _ string) { queue = append(queue, dep) })
		}
	}
	return runs, nil
}

// dagScope is the DAG template's inputs and the outputs of its fulfilled tasks; a loop's task group
// contributes the fan-in of its iterations.
func (e *Engine) dagScope(p *Pass, dagNode *wfv1.NodeStatus, tmpl *wfv1.Template) scope {
	sc := scope{}.withInputs(tmpl)
	for _, t := range tmpl.DAG.Tasks {
		n, ok := p.peekNode(dagNode.Name + "." + t.Name)
		if !ok || !fulfilled(&n) {
			continue
		}
		sc.addNode("tasks."+t.Name, &n)
		if n.Type == wfv1.NodeTypeTaskGroup {
			sc.addAggregate("tasks."+t.Name, loopChildren(p, n.Name, dagNode.ID))
		}
	}
	return sc
}

// runLoop runs a task with withItems/withParam/withSequence: a TaskGroup node named after the task, with
// one child per iteration, name(i:item). The group completes when every iteration is fulfilled:
// Succeeded, or the phase of a failed iteration. A loop that cannot expand (withParam not a JSON list) is
// an errored node naming the field; an empty one is Skipped.
func (r *dagRun) runLoop(ctx context.Context, task, resolved *wfv1.DAGTask, deps []string) error {
	p, name := r.p, r.node.Name+"."+task.Name
	group := p.node(name)
	items, err := loop{resolved.WithItems, resolved.WithParam, resolved.WithSequence}.expand(resolved.When)
	if err != nil || len(items) == 0 {
		r.loopNotRun(group, task, deps, err)
		return nil
	}
	if group == nil {
		group = p.newNode(nodeAt{name, task.Name, task.Template, r.node.ID}, wfv1.NodeTypeTaskGroup, wfv1.NodeRunning, "")
		r.linker(deps)(group.ID)
	}
	base := *resolved
	base.WithItems, base.WithParam, base.WithSequence = nil, "", nil
	env := mergeParams(r.globals, r.sc)
	done, phase := true, wfv1.NodeSucceeded
	for i, item := range items {
		iterName := loopChildName(task.Name, i, item)
		childName := r.node.Name + "." + iterName
		child := p.node(childName)
		if !fulfilled(child) {
			x, err := substituteItem(&base, i, item, env, base.When)
			if err != nil {
				p.markPhase(p.node(name), wfv1.NodeError, fmt.Sprintf("task %s: %v", task.Name, err))
				return nil
			}
			child, err = r.runIteration(ctx, p.node(name), nodeAt{childName, iterName, x.Template, r.node.ID}, x)
			if err != nil {
				return err
			}
		}
		switch {
		case child == nil || !fulfilled(child):
			done = false
		case child.FailedOrError():
			phase = child.Phase
		}
	}
	if done {
		p.markPhase(p.node(name), phase, "")
	}
	return nil
}

// loopNotRun records a loop that cannot expand (err) as an errored node, or one over no items as Skipped.
func (r *dagRun) loopNotRun(group *wfv1.NodeStatus, task *wfv1.DAGTask, deps []string, err error) {
	at := nodeAt{r.node.Name + "." + task.Name, task.Name, task.Template, r.node.ID}
	switch {
	case err != nil && group != nil:
		r.p.markPhase(group, wfv1.NodeError, fmt.Sprintf("task %s: %v", task.Name, err))
	case err != nil:
		r.recordNotRun(at, deps, wfv1.NodeError, fmt.Sprintf("task %s: %v", task.Name, err))
	case group == nil:
		r.recordNotRun(at, deps, wfv1.NodeSkipped, "Skipped, empty params")
	}
}

// runIteration runs one iteration x of a task loop as node at, under its group, honouring the
// iteration's `when`.
func (r *dagRun) runIteration(ctx context.Context, group *wfv1.NodeStatus, at nodeAt, x *wfv1.DAGTask) (*wfv1.NodeStatus, error) {
	p := r.p
	if _, exists := p.peekNode(at.name); !exists && p.budgetSpent() {
		return nil, nil // a later pass starts it
	}
	if p.node(at.name) == nil {
		proceed, err := evalWhen(x.When)
		if err != nil || !proceed {
			phase, msg := wfv1.NodeSkipped, fmt.Sprintf("when '%s' evaluated false", x.When)
			if err != nil {
				phase, msg = wfv1.NodeError, err.Error()
			}
			n := p.newNode(at, wfv1.NodeTypeSkipped, phase, msg)
			p.addChild(p.node(group.Name), n.ID)
			p.Events = append(p.Events, nodeEvent(n))
			return n, nil
		}
	}
	child, err := r.e.executeTemplate(ctx, &nodeCall{p: p, name: at.name, display: at.display,
		call: templateCall{name: x.Template, ref: x.TemplateRef, inline: x.Inline}, args: x.Arguments, boundaryID: r.node.ID, parentJSON: r.tmplJSON})
	if err != nil {
		if abortsPass(err) {
			return nil, err
		}
		msg := fmt.Sprintf("task '%s' errored: %v", at.name, err)
		if n := p.node(at.name); n != nil {
			return p.markPhase(n, wfv1.NodeError, msg), nil
		}
		n := p.newNode(at, wfv1.NodeTypeSkipped, wfv1.NodeError, msg)
		p.addChild(p.node(group.Name), n.ID)
		return n, nil
	}
	if child != nil {
		p.addChild(p.node(group.Name), child.ID)
	}
	return child, nil
}
