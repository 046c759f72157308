package explain

import (
	"fmt"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/taskresult"
)

// What a node (or the workflow) waits on.
const (
	// WaitTaskResult: the pod ended; the executor's report (WorkflowTaskResult) is not finalized.
	WaitTaskResult = "task-result"
	// WaitPodObservation: the pod ended but the node does not show it: the controller has not recorded it.
	WaitPodObservation = "pod-observation"
	// WaitPodCreation: the node has no pod.
	WaitPodCreation = "pod-creation"
	// WaitPodStart: the pod is Pending (scheduling, image pull, init).
	WaitPodStart = "pod-start"
	// WaitPod: the pod runs; the node waits for its containers to finish.
	WaitPod = "pod"
	// WaitPodDeletion: the pod is being deleted; the kubelet reports its final state.
	WaitPodDeletion = "pod-deletion"
	// WaitFinalizerRelease: the node is fulfilled but its pod still holds the status finalizer.
	WaitFinalizerRelease = "finalizer-release"
	// WaitResume: a suspend node without a duration waits for a Resume.
	WaitResume = "resume"
	// WaitTimer: a suspend node with a duration waits for it to pass.
	WaitTimer = "timer"
	// WaitChildren: a steps, step-group or DAG node waits for its children.
	WaitChildren = "children"
	// WaitParallelism: the node's pod is not created while the workflow's parallelism is used up.
	WaitParallelism = "parallelism"
	// WaitWorkflowSuspended: the workflow is suspended; no new node starts until a Resume.
	WaitWorkflowSuspended = "workflow-suspended"
	// WaitShutdown: the workflow is shut down (or past its deadline); running pods are being stopped.
	WaitShutdown = "shutdown"
	// WaitDeadline: the workflow's activeDeadlineSeconds ends it at Until.
	WaitDeadline = "deadline"
	// WaitController: the workflow has no phase yet: no controller has picked it up.
	WaitController = "controller"
)

// Wait says what something waits on, since when, and until when if a deadline is known.
type Wait struct {
	On     string    `json:"on"`
	Since  time.Time `json:"since,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	Detail string    `json:"detail"`
}

func (c *explainer) wait(n *wfv1.NodeStatus) *Wait {
	switch {
	case n.Type == wfv1.NodeTypePod:
		return c.podWait(n)
	case n.Phase.Completed() || n.Phase == wfv1.NodeSkipped || n.Phase == wfv1.NodeOmitted:
		return nil
	case n.Type == wfv1.NodeTypeSuspend:
		return c.suspendWait(n)
	case len(n.Children) > 0 || n.Type == wfv1.NodeTypeSteps || n.Type == wfv1.NodeTypeStepGroup || n.Type == wfv1.NodeTypeDAG || n.Type == wfv1.NodeTypeTaskGroup:
		return c.childrenWait(n)
	}
	return &Wait{On: WaitController, Since: n.StartedAt.Time, Detail: fmt.Sprintf("a %s node the controller has not finished", n.Type)}
}

func (c *explainer) podWait(n *wfv1.NodeStatus) *Wait {
	pod := c.pods[n.ID]
	result := ResultState(c.wf, c.results[n.ID])
	fulfilled := (n.Phase.Completed() && taskresult.Synced(n)) || n.Phase == wfv1.NodeSkipped || n.Phase == wfv1.NodeOmitted
	switch {
	case fulfilled:
		if pod != nil && inspect.HoldsFinalizer(pod) {
			return &Wait{On: WaitFinalizerRelease, Since: n.FinishedAt.Time,
				Detail: fmt.Sprintf("the node is final but pod %s still holds %s; the controller releases it after persisting the node", pod.Name, common.FinalizerPodStatus)}
		}
		return nil
	case n.Phase.Completed():
		// A failed pod's node: it keeps its failure, but successors wait for its result.
		return &Wait{On: WaitTaskResult, Since: n.FinishedAt.Time, Until: c.resultDeadline(n.FinishedAt.Time),
			Detail: fmt.Sprintf("the node is %s; its successors wait for its task result, which is %s", n.Phase, describeResult(result))}
	case taskresult.Waiting(&c.s.Workflow.Ext, n):
		since := taskresult.WaitStart(&c.s.Workflow.Ext, n)
		detail := fmt.Sprintf("its task result is %s", describeResult(result))
		if pod != nil {
			detail = fmt.Sprintf("pod %s %s; %s", pod.Name, strings.ToLower(string(pod.Status.Phase)), detail)
		} else {
			detail = "its pod is gone; " + detail
		}
		return &Wait{On: WaitTaskResult, Since: since, Until: c.resultDeadline(since), Detail: detail}
	case pod == nil:
		if c.wf.Spec.Parallelism != nil && int64(c.running) >= *c.wf.Spec.Parallelism && n.Phase == wfv1.NodePending {
			return &Wait{On: WaitParallelism, Since: n.StartedAt.Time,
				Detail: fmt.Sprintf("%d of %d parallel pods are running", c.running, *c.wf.Spec.Parallelism)}
		}
		return &Wait{On: WaitPodCreation, Since: n.StartedAt.Time,
			Detail: "no pod of this workflow runs this node (not created yet, or deleted)"}
	case taskresult.PodEnded(pod):
		return &Wait{On: WaitPodObservation, Since: inspect.PodEnd(pod),
			Detail: fmt.Sprintf("pod %s %s but the node still says %s: the controller has not recorded it; its task result is %s",
				pod.Name, strings.ToLower(string(pod.Status.Phase)), n.Phase, describeResult(result))}
	case pod.DeletionTimestamp != nil:
		return &Wait{On: WaitPodDeletion, Since: pod.DeletionTimestamp.Add(-graceOf(pod)), Until: pod.DeletionTimestamp.Time,
			Detail: fmt.Sprintf("pod %s is being deleted; the kubelet reports its final state, else the node becomes Error \"pod deleted\"", pod.Name)}
	case shutdownOrPastDeadline(c.wf, Shutdown(c.s.Workflow), c.opts.Now):
		return &Wait{On: WaitShutdown, Since: pod.CreationTimestamp.Time,
			Detail: fmt.Sprintf("the workflow is shut down or past its deadline; pod %s is being stopped", pod.Name)}
	case pod.Status.Phase == corev1.PodRunning:
		since := pod.CreationTimestamp.Time
		if pod.Status.StartTime != nil {
			since = pod.Status.StartTime.Time
		}
		return &Wait{On: WaitPod, Since: since, Detail: fmt.Sprintf("pod %s is running", pod.Name)}
	}
	return &Wait{On: WaitPodStart, Since: pod.CreationTimestamp.Time, Detail: fmt.Sprintf("pod %s is pending%s", pod.Name, pendingReason(pod))}
}

// resultDeadline is when wfguard times the wait out (argo's controller has no such limit for succeeded
// pods).
func (c *explainer) resultDeadline(since time.Time) time.Time {
	if since.IsZero() {
		return time.Time{}
	}
	timeout, _ := taskresult.TimeoutFor(c.wf, c.opts.TaskResultTimeout)
	return since.Add(timeout)
}

func describeResult(state string) string {
	switch state {
	case ResultNone:
		return "missing (no WorkflowTaskResult of this workflow)"
	case ResultPlaceholder:
		return "a placeholder (report-outputs-completed=false, no outputs)"
	case ResultIncomplete:
		return "not finalized (outputs written, report-outputs-completed=false)"
	case ResultForeign:
		return "owned by another workflow UID (ignored)"
	}
	return "complete but not merged yet"
}

func graceOf(pod *corev1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds == nil {
		return 0
	}
	return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
}

func pendingReason(pod *corev1.Pod) string {
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			return fmt.Sprintf(": %s: %s", s.Name, w.Reason)
		}
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return ": unschedulable: " + cond.Message
		}
	}
	if pod.Spec.NodeName == "" {
		return ": not scheduled"
	}
	return ""
}

func (c *explainer) suspendWait(n *wfv1.NodeStatus) *Wait {
	tmpl := c.template(n)
	if tmpl != nil && tmpl.Suspend != nil && tmpl.Suspend.Duration != "" {
		if d, err := wfv1.ParseStringToDuration(tmpl.Suspend.Duration); err == nil {
			return &Wait{On: WaitTimer, Since: n.StartedAt.Time, Until: n.StartedAt.Add(d),
				Detail: fmt.Sprintf("suspended for %s, or until resumed", tmpl.Suspend.Duration)}
		}
	}
	return &Wait{On: WaitResume, Since: n.StartedAt.Time,
		Detail: fmt.Sprintf("suspended until resumed (wfguard action resume %s -n %s)", c.wf.Name, c.wf.Namespace)}
}

func (c *explainer) childrenWait(n *wfv1.NodeStatus) *Wait {
	var open []string
	for _, id := range n.Children {
		child, ok := c.wf.Status.Nodes[id]
		if !ok {
			continue
		}
		if !(child.Phase.Completed() && taskresult.Synced(&child)) && child.Phase != wfv1.NodeSkipped && child.Phase != wfv1.NodeOmitted {
			open = append(open, child.DisplayName)
		}
	}
	detail := "its children are done; the controller has not completed it yet"
	switch {
	case len(open) > 0:
		detail = "unfinished: " + joinList(open)
	case Suspended(c.s.Workflow):
		detail = "the workflow is suspended: no next step starts until a Resume"
	}
	return &Wait{On: WaitChildren, Since: n.StartedAt.Time, Detail: detail}
}

// workflowWait is what the whole workflow waits on, beyond its nodes.
func (c *explainer) workflowWait() *Wait {
	wf := c.wf
	switch {
	case wf.Status.Phase.Completed():
		return nil
	case wf.Status.Phase == "":
		return &Wait{On: WaitController, Since: wf.CreationTimestamp.Time,
			Detail: "no controller has picked the workflow up (no status.phase): is a controller running for this namespace and instance ID?"}
	case Shutdown(c.s.Workflow) != "":
		return &Wait{On: WaitShutdown, Detail: fmt.Sprintf("shut down with strategy %s; running pods are being stopped", Shutdown(c.s.Workflow))}
	case Suspended(c.s.Workflow):
		return &Wait{On: WaitWorkflowSuspended, Detail: fmt.Sprintf("suspended: no new node starts until resumed (wfguard action resume %s -n %s)", wf.Name, wf.Namespace)}
	}
	if d := deadline(wf); !d.IsZero() {
		return &Wait{On: WaitDeadline, Since: wf.Status.StartedAt.Time, Until: d,
			Detail: fmt.Sprintf("activeDeadlineSeconds=%d stops it at the deadline", *wf.Spec.ActiveDeadlineSeconds)}
	}
	return nil
}

func deadline(wf *wfv1.Workflow) time.Time {
	if wf.Spec.ActiveDeadlineSeconds == nil || wf.Status.StartedAt.IsZero() {
		return time.Time{}
	}
	return wf.Status.StartedAt.Add(time.Duration(*wf.Spec.ActiveDeadlineSeconds) * time.Second)
}

func shutdownOrPastDeadline(wf *wfv1.Workflow, s wfv1.ShutdownStrategy, now time.Time) bool {
	d := deadline(wf)
	return s != "" || (!d.IsZero() && !now.Before(d))
}

func joinList(items []string) string { return strings.Join(items, ", ") }
