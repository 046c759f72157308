package engine

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podgc"
	"github.com/wfguard/wfguard/taskresult"
)

// podTemplate runs the templates that are one pod: container, script, resource, data, containerSet. The
// pod is built and created when the node is; later passes only assess it (runningPodNode).
type podTemplate struct{}

func (podTemplate) run(ctx context.Context, e *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error) {
	if n != nil {
		return n, nil
	}
	return e.startPodNode(ctx, c)
}

// startPodNode records a Pod node (result not synced: the pessimistic gate) and builds its pod, which the
// pass creates at its end with the others (createPods). A pod that cannot be built errors the node; like
// argo, the error is also its caller's (startError): a step group or DAG errors naming this child.
func (e *Engine) startPodNode(ctx context.Context, c *nodeCall) (*wfv1.NodeStatus, error) {
	p, tmpl := c.p, c.resolved
	at := nodeAt{c.name, c.display, tmpl.Name, c.boundaryID}
	if n := notStarted(c, at); n != nil {
		return n, nil
	}
	tokenSecret, err := e.executorTokenSecret(ctx, p, tmpl)
	if isAPIError(err) {
		return nil, err // no node yet: the retried pass starts it
	}
	n := p.newNode(at, wfv1.NodeTypePod, wfv1.NodePending, "")
	if waited, ok := p.oldPodWaits[n.ID]; ok {
		n.StartedAt = waited.StartedAt // the node started when it first tried; its template timeout counts from then
	}
	n.Inputs = inputsOf(tmpl)
	taskresult.CloseGate(n)
	p.setNode(n)
	var withArchive *wfv1.Template
	if err == nil {
		withArchive, err = withArchiveLocation(p, tmpl, c.name, n.ID)
	}
	var pod *corev1.Pod
	if err == nil {
		pod, err = e.buildPod(c, n, withArchive, tokenSecret)
	}
	if err != nil {
		// A pod that cannot be built never runs: its result can never arrive.
		taskresult.OpenGate(n)
		return p.markPhase(n, wfv1.NodeError, podBuildMessage(err)), &startError{err: err}
	}
	if progress, ok := clientstatus.AnnotatedProgress(pod); ok {
		n.Progress = progress // argo's initial progress, from the pod's metadata
		p.setNode(n)
	}
	p.creates = append(p.creates, podCreate{pod: pod, nodeID: n.ID, nodeName: c.name})
	if withArchive.ContainerSet != nil {
		addContainerNodes(p, n, withArchive.ContainerSet, c.opts.flag)
		return p.node(c.name), nil // with its Container children
	}
	return n, nil
}

// notStarted is the node of a pod that must not start, Failed with why: the workflow is shut down (an exit
// handler's pod still runs on Stop), or past its deadline (an exit handler's is not bound by it); nil when
// it may start.
func notStarted(c *nodeCall, at nodeAt) *wfv1.NodeStatus {
	p := c.p
	var msg string
	if s := shutdown(p); s.Enabled() && !s.ShouldExecute(c.onExit()) {
		msg = fmt.Sprintf("workflow shutdown with strategy: %s", s)
	} else if d := c.podDeadline(); !d.IsZero() && !p.Now.Before(d) {
		msg = "Step exceeded its deadline"
	} else {
		return nil
	}
	n := p.newNode(at, wfv1.NodeTypePod, wfv1.NodeFailed, msg)
	p.Events = append(p.Events, nodeEvent(n))
	return n
}

// onExit reports whether the call is part of an exit handler: its pods run on Stop and past the deadline.
func (c *nodeCall) onExit() bool { return c.opts.onExit || c.p.exiting }

// podDeadline is when the call's pod must end: the workflow's deadline, none for an exit handler's.
func (c *nodeCall) podDeadline() time.Time {
	if c.onExit() {
		return time.Time{}
	}
	return deadline(c.p.WF)
}

// buildPod is the pod of node n, running tmpl (the template with its archive location): argo's pod spec,
// the anti-affinity of a retry's earlier hosts, the template's timeout, and the refusals (an unresolved
// output reference, the controller's record key).
func (e *Engine) buildPod(c *nodeCall, n *wfv1.NodeStatus, tmpl *wfv1.Template, tokenSecret string) (*corev1.Pod, error) {
	p := c.p
	cfg := e.controllerConfig()
	pod, err := podspec.Build(podspec.Input{
		Workflow: p.WF, NodeName: c.name, NodeID: n.ID, Template: tmpl,
		ExecutorImage: e.executorImage(cfg), Executor: cfg.Executor, MainContainer: cfg.MainContainer,
		InstanceID: e.InstanceID, IncludeScriptOutput: includesResult(c, tmpl),
		Deadline: c.podDeadline(), Now: p.Now, StatusFinalizer: e.StatusFinalizer, OnExit: c.onExit(),
		PodGCStrategy: podgc.StrategyAnnotation(p.WF), Globals: p.globals(), ExecutorTokenSecret: tokenSecret,
	})
	if err != nil {
		return nil, err
	}
	addHostAntiAffinity(pod, p.failedHostsFor(n.ID, c.boundaryID))
	timeout, err := templateTimeout(tmpl)
	if err == nil {
		err = applyTimeout(pod, n, timeout, p.Now)
	}
	if err == nil {
		err = refuseUnresolvedOutputs(pod)
	}
	if err == nil {
		err = refuseRecordKey(pod, e.RecordKeySecret)
	}
	return pod, err
}

// includesResult says whether the pod reports outputs.result: when a parent reads it, always for a data
// template (the transformed data is the result), never for a resource one (argoexec's resource command
// prints none, and argo never asks it).
func includesResult(c *nodeCall, tmpl *wfv1.Template) bool {
	switch tmpl.GetType() {
	case wfv1.TemplateTypeResource:
		return false
	case wfv1.TemplateTypeData:
		return true
	}
	return includeScriptOutput(c.parentJSON, c.name)
}
