package bench

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podfinalizer"
)

// Event messages as the controller words them: the correlator merges Events by message, so the same
// wording makes the same creates and patches.
const (
	msgWorkflowRunning   = "Workflow Running"
	msgWorkflowSucceeded = "Workflow completed"
	msgNodeSucceeded     = "Succeeded node "
	msgReleasedOne       = "Released the " + podfinalizer.Finalizer + " finalizer of 1 pods whose final state is recorded"
)

// pipelineWorkflow runs a chain with the writes wfguard makes for it that users see, in its order, with no
// reconcile loop and no cache (docs/performance.md, "The raw client", has the measured table):
//
//   - the workflow's first write, after its first pod is created: phase Running, the DAG node and the first
//     node Pending (Event WorkflowRunning);
//   - when its pod is seen Running, the node Running with its host (awaitNode);
//   - when its pod Succeeded with its result: the successor's pod is created, then one write records the
//     node Succeeded with its outputs and the successor Pending, or, for the last node, the DAG node and the
//     workflow Succeeded (Events WorkflowNodeSucceeded, and WorkflowSucceeded); then the pod's finalizer is
//     released (Event PodFinalizersReleased).
func pipelineWorkflow(ctx context.Context, c rawClients, obs *observer, wf *wfv1.Workflow) error {
	ns := obs.namespace
	wfs := c.argo.ArgoprojV1alpha1().Workflows(ns)
	wf, err := wfs.Create(ctx, wf, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("raw pipeline: creating workflow: %w", err)
	}
	tasks := wf.Spec.Templates[0].DAG.Tasks
	now := stamp()
	dagID := wf.Name
	wf.Status.Phase, wf.Status.StartedAt = wfv1.WorkflowRunning, now
	wf.Status.Nodes = wfv1.Nodes{dagID: {ID: dagID, Name: wf.Name, DisplayName: wf.Name, Type: wfv1.NodeTypeDAG, TemplateName: "main",
		TemplateScope: "local/" + wf.Name, Phase: wfv1.NodeRunning, StartedAt: now}}
	// startNode creates node k's pod and adds the node, Pending, to the status the next write stores.
	startNode := func(k int, parent string) (*corev1.Pod, error) {
		id, name := fmt.Sprintf("%s-%d", wf.Name, k), wf.Name+"."+tasks[k].Name
		tmpl := workload.StepTemplate()
		in := "ok"
		if k == 0 {
			in = ""
		}
		tmpl.Inputs.Parameters[0].Value = wfv1.AnyStringPtr(in)
		pod, err := podspec.Build(podspec.Input{Workflow: wf, NodeName: name, NodeID: id, Template: &tmpl, Now: time.Now(), StatusFinalizer: true})
		if err != nil {
			return nil, fmt.Errorf("raw pipeline: building pod for %s: %w", name, err)
		}
		if pod, err = c.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("raw pipeline: creating pod for %s: %w", name, err)
		}
		wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: name, DisplayName: tasks[k].Name, Type: wfv1.NodeTypePod, TemplateName: "step",
			TemplateScope: "local/" + wf.Name, Phase: wfv1.NodePending, BoundaryID: dagID, StartedAt: stamp(), Inputs: tmpl.Inputs.DeepCopy()}
		p := wf.Status.Nodes[parent]
		p.Children = append(p.Children, id)
		wf.Status.Nodes[parent] = p
		return pod, nil
	}
	update := func(what string) error {
		updated, err := wfs.Update(ctx, wf, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("raw pipeline: %s of %s: %w", what, wf.Name, err)
		}
		wf = updated
		return nil
	}
	pod, err := startNode(0, dagID)
	if err != nil {
		return err
	}
	if err := update("starting"); err != nil {
		return err
	}
	c.recorder.Event(wf, corev1.EventTypeNormal, engine.ReasonWorkflowRunning, msgWorkflowRunning)
	for k := range tasks {
		id := fmt.Sprintf("%s-%d", wf.Name, k)
		progress, err := awaitNode(ctx, obs, id, func(p nodeProgress) error {
			wf.Status.Nodes[id] = withProgress(wf.Status.Nodes[id], p)
			return update("recording the progress of " + id)
		})
		if err != nil {
			return err
		}
		n := withProgress(wf.Status.Nodes[id], progress)
		n.Phase, n.FinishedAt, n.TaskResultSynced = wfv1.NodeSucceeded, stamp(), ptr(true)
		n.Outputs = nodeOutputs()
		wf.Status.Nodes[id] = n
		last := k == len(tasks)-1
		var next *corev1.Pod
		if last {
			dag := wf.Status.Nodes[dagID]
			dag.Phase, dag.FinishedAt = wfv1.NodeSucceeded, stamp()
			wf.Status.Nodes[dagID] = dag
			wf.Status.Phase, wf.Status.FinishedAt = wfv1.WorkflowSucceeded, stamp()
			wf.Labels = map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}
		} else if next, err = startNode(k+1, id); err != nil {
			return err
		}
		if err := update("recording node " + id); err != nil {
			return err
		}
		c.recorder.Event(wf, corev1.EventTypeNormal, engine.ReasonNodeSucceeded, msgNodeSucceeded+n.Name)
		if last {
			c.recorder.Event(wf, corev1.EventTypeNormal, engine.ReasonNodeSucceeded, msgNodeSucceeded+wf.Name)
			c.recorder.Event(wf, corev1.EventTypeNormal, engine.ReasonWorkflowSucceeded, msgWorkflowSucceeded)
		}
		if err := removeFinalizer(ctx, c.kube, ns, pod.Name, pod.UID); err != nil {
			return err
		}
		c.recorder.Event(wf, corev1.EventTypeNormal, podfinalizer.ReasonFinalizersReleased, msgReleasedOne)
		pod = next
	}
	return nil
}

// awaitNode waits until the node's pod Succeeded with its result. If the pod is seen Running first, the
// node's progress (Running, host, outputs so far) is written once, as users see a running node; otherwise
// the node's final write carries it. It returns the node's progress at completion.
func awaitNode(ctx context.Context, obs *observer, id string, write func(nodeProgress) error) (nodeProgress, error) {
	ready := obs.nodeReady(id)
	wrote := false
	for {
		p, changed := obs.nodeProgress(id)
		select {
		case <-ready:
			p, _ = obs.nodeProgress(id)
			return p, nil
		default:
		}
		if p.Running && !wrote {
			if err := write(p); err != nil {
				return p, err
			}
			wrote = true
		}
		select {
		case <-ready:
		case <-changed:
		case <-ctx.Done():
			return p, fmt.Errorf("raw pipeline: waiting for node %s: %w", id, ctx.Err())
		}
	}
}

// withProgress is n recording p: its host, Running once its pod ran, its outputs once reported.
func withProgress(n wfv1.NodeStatus, p nodeProgress) wfv1.NodeStatus {
	n.HostNodeName = p.Host
	if p.Running && n.Phase == wfv1.NodePending {
		n.Phase = wfv1.NodeRunning
	}
	if p.Outputs {
		n.Outputs = nodeOutputs()
	}
	return n
}

// nodeOutputs are the outputs every benchmark step reports.
func nodeOutputs() *wfv1.Outputs {
	return &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: workload.OutputParameter, Value: wfv1.AnyStringPtr("ok"),
		ValueFrom: &wfv1.ValueFrom{Path: "/tmp/out"}}}, ExitCode: ptr("0")}
}

// stamp is now at the second, as status times are stored.
func stamp() metav1.Time { return metav1.NewTime(time.Now().UTC().Truncate(time.Second)) }

func ptr[T any](v T) *T { return &v }
