package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/custommetrics"
)

// MetricsChecker tells whether a custom metric emission would be recorded (custommetrics.Registry): the
// engine records the refusals on the workflow, as argo does, before the pass is persisted; the controller
// emits after the write, so a pass that is not persisted counts nothing.
type MetricsChecker interface {
	Check(em custommetrics.Emission) error
}

// StartState is what a pass began from, to tell which nodes and whether the workflow completed during it:
// each completion is emitted once, by the pass that records it.
type StartState struct {
	// Fulfilled has every node that existed, true for those already fulfilled.
	Fulfilled         map[string]bool
	WorkflowCompleted bool
}

// StartStateOf is wf's state as a pass begins.
func StartStateOf(wf *wfv1.Workflow) *StartState {
	s := &StartState{Fulfilled: map[string]bool{}, WorkflowCompleted: wf.Status.Phase.Completed()}
	for id, n := range wf.Status.Nodes {
		s.Fulfilled[id] = fulfilled(&n)
	}
	return s
}

// recordCustomMetrics adds to p.Metrics what argo's computeMetrics emits for this pass: realtime gauges of
// the workflow (every pass) and of nodes created this pass, every metric of nodes and of the workflow that
// completed this pass. Definitions that cannot be emitted go to the MetricsError condition.
func (e *Engine) recordCustomMetrics(p *Pass) {
	if p.AtStart == nil {
		return
	}
	r := custommetrics.Resolver{When: evalWhen}
	var problems []string
	emit := func(defs []*wfv1.Prometheus, sc custommetrics.Scope, realtimeOnly bool) {
		ems, bad := r.Resolve(defs, sc, string(p.WF.UID), realtimeOnly)
		problems = append(problems, bad...)
		for _, em := range ems {
			if err := e.checkMetric(em); err != nil {
				problems = append(problems, fmt.Sprintf("could not construct metric '%s': %s", em.Metric.Name, err))
				continue
			}
			p.Metrics = append(p.Metrics, em)
		}
	}
	if spec := execSpec(p.WF).Metrics; spec != nil && p.WF.Status.Phase != wfv1.WorkflowUnknown {
		emit(spec.Prometheus, p.defaultMetricScope(), true)
	}
	e.recordNodeMetrics(p, emit)
	if spec := execSpec(p.WF).Metrics; spec != nil && p.WF.Status.Phase.Completed() && !p.AtStart.WorkflowCompleted {
		if root := p.node(p.WF.Name); root != nil {
			emit(spec.Prometheus, p.nodeMetricScope(root), false)
		}
	}
	for _, msg := range problems {
		p.WF.Status.Conditions.UpsertConditionMessage(wfv1.Condition{Type: wfv1.ConditionTypeMetricsError, Status: metav1.ConditionTrue, Message: msg})
	}
}

// recordNodeMetrics emits the metrics of the templates of nodes created or completed this pass, in node
// ID order so a pass's emissions are deterministic.
func (e *Engine) recordNodeMetrics(p *Pass, emit func([]*wfv1.Prometheus, custommetrics.Scope, bool)) {
	retryParent := retryParents(p.WF)
	for _, id := range slices.Sorted(maps.Keys(p.WF.Status.Nodes)) {
		n := p.nodeByID(id)
		if !runsTemplate(n) {
			continue
		}
		t := p.templateOf(n)
		if t == nil || t.Metrics == nil || len(t.Metrics.Prometheus) == 0 {
			continue
		}
		wasFulfilled, existed := p.AtStart.Fulfilled[id]
		if !existed {
			emit(t.Metrics.Prometheus, p.nodeMetricScope(n), true)
		}
		if !fulfilled(n) || wasFulfilled {
			continue
		}
		// An attempt that ended its retry node is counted through the retry node, as in argo.
		if parent := retryParent[id]; parent != nil && fulfilled(parent) && !p.AtStart.Fulfilled[parent.ID] {
			continue
		}
		emit(t.Metrics.Prometheus, p.nodeMetricScope(n), false)
	}
}

// runsTemplate tells the nodes argo runs their template for, and emits its metrics: not the groups of an
// expanded step or task (a task group names the task's template) nor a node skipped before it ran.
func runsTemplate(n *wfv1.NodeStatus) bool {
	switch n.Type {
	case wfv1.NodeTypeTaskGroup, wfv1.NodeTypeStepGroup, wfv1.NodeTypeSkipped:
		return false
	}
	return true
}

// retryParents maps each attempt of a retry node to that node.
func retryParents(wf *wfv1.Workflow) map[string]*wfv1.NodeStatus {
	out := map[string]*wfv1.NodeStatus{}
	for id, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypeRetry {
			continue
		}
		parent := wf.Status.Nodes[id]
		for _, child := range n.Children {
			out[child] = &parent
		}
	}
	return out
}

func (e *Engine) checkMetric(em custommetrics.Emission) error {
	if e.Metrics == nil {
		return nil
	}
	return e.Metrics.Check(em)
}

// defaultMetricScope is argo's scope of workflow-level metrics before completion: the globals, status
// Pending and zero durations; {{workflow.duration}} is the only realtime value.
func (p *Pass) defaultMetricScope() custommetrics.Scope {
	vars := p.globals()
	vars[common.LocalVarDuration] = "0"
	vars[common.LocalVarStatus] = string(wfv1.NodePending)
	vars[common.LocalVarResourcesDuration+".cpu"] = "0"
	vars[common.LocalVarResourcesDuration+".memory"] = "0"
	return custommetrics.Scope{Vars: vars, Spans: map[string]custommetrics.Span{
		custommetrics.VarWorkflowDuration: {Start: p.WF.Status.StartedAt.Time, End: p.WF.Status.FinishedAt.Time},
	}}
}

// nodeMetricScope is argo's scope of a node's metrics: the default scope plus the node's status,
// duration, retries, inputs, outputs, exit code and resource durations.
func (p *Pass) nodeMetricScope(n *wfv1.NodeStatus) custommetrics.Scope {
	sc := p.defaultMetricScope()
	span := custommetrics.Span{Start: n.StartedAt.Time}
	if fulfilled(n) {
		span.End = n.FinishedAt.Time
	}
	end := span.End
	if end.IsZero() {
		end = p.Now
	}
	sc.Vars[common.LocalVarDuration] = fmt.Sprintf("%f", end.Sub(n.StartedAt.Time).Seconds())
	sc.Spans[custommetrics.VarDuration] = span
	if len(n.Children) > 0 {
		sc.Vars[common.LocalVarRetries] = strconv.Itoa(len(n.Children) - 1)
	}
	if n.Phase != "" {
		sc.Vars[common.LocalVarStatus] = string(n.Phase)
	}
	addNodeMetricVars(sc.Vars, n)
	return sc
}

// addNodeMetricVars adds a node's inputs, outputs, exit code and resource durations.
func addNodeMetricVars(vars map[string]string, n *wfv1.NodeStatus) {
	if n.Inputs != nil {
		for _, param := range n.Inputs.Parameters {
			vars["inputs.parameters."+param.Name] = paramText(param.Value)
		}
	}
	if o := n.Outputs; o != nil {
		if o.Result != nil {
			vars["outputs.result"] = *o.Result
		}
		if o.ExitCode != nil {
			vars[common.LocalVarExitCode] = *o.ExitCode
		}
		for _, param := range o.Parameters {
			vars["outputs.parameters."+param.Name] = paramText(param.Value)
		}
	}
	for name, d := range n.ResourcesDuration {
		vars[fmt.Sprintf("%s.%s", common.LocalVarResourcesDuration, name)] = fmt.Sprint(d.Duration().Seconds())
	}
}

// paramText is a parameter's value, empty when it has none (argo's metric scope).
func paramText(v *wfv1.AnyString) string {
	if v == nil {
		return ""
	}
	return v.String()
}
