package engine

import (
	"context"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/taskresult"
)

// timeoutMessage is argo's message for a node that stayed Pending past its template's timeout.
const timeoutMessage = "timeout"

// templateTimeout parses a leaf template's `timeout`, a Go duration counted from its node's start.
func templateTimeout(t *wfv1.Template) (time.Duration, error) {
	if t.Timeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(t.Timeout)
	if err != nil {
		return 0, fmt.Errorf("invalid timeout format. %v", err) // argo's wording
	}
	return d, nil
}

// applyTimeout bounds a new pod by what is left of its node's timeout, so the kubelet ends a pod that runs
// too long even while wfguard is down. Like argo, a timeout with one second or less left is an error.
func applyTimeout(pod *corev1.Pod, n *wfv1.NodeStatus, timeout time.Duration, now time.Time) error {
	if timeout <= 0 {
		return nil
	}
	left := int64(n.StartedAt.Add(timeout).Sub(now) / time.Second)
	if left <= 1 {
		return fmt.Errorf("%s exceeded its deadline", n.Name)
	}
	// Argo lets the timeout override a shorter workflow deadline; the earlier of the two is kept here.
	if pod.Spec.ActiveDeadlineSeconds == nil || left < *pod.Spec.ActiveDeadlineSeconds {
		pod.Spec.ActiveDeadlineSeconds = &left
	}
	return nil
}

// enforceTimeout fails a pod node still Pending past its template's timeout, as argo does ("timeout").
// A pod no kubelet runs yet is deleted (it will never report a result); a pod already on a node is stopped
// and its node's result gate stays closed until that pod reports. Running pods are bounded by the
// activeDeadlineSeconds set at creation.
func (e *Engine) enforceTimeout(ctx context.Context, p *Pass, n *wfv1.NodeStatus, tmpl *wfv1.Template, args wfv1.Arguments, opts execOpts) error {
	if tmpl == nil || tmpl.Timeout == "" || n.Phase != wfv1.NodePending {
		return nil
	}
	resolved, err := e.processArgs(tmpl, args, common.Parameters(p.globals()), p.WF.Namespace, p.configMaps())
	if err == nil && opts.retryParams != nil {
		resolved, err = common.SubstituteParams(resolved, common.Parameters(p.globals()), opts.retryParams)
	}
	if err != nil {
		return nil // the node was created from this template; it resolved then
	}
	timeout, err := templateTimeout(resolved)
	if err != nil || timeout <= 0 {
		return nil
	}
	deadline := n.StartedAt.Add(timeout)
	if p.Now.Before(deadline) {
		p.requeueBy(deadline)
		return nil
	}
	pod := p.Pods[n.ID]
	switch {
	case pod == nil:
		return nil // missing from the cache: the assess phase decides after its grace
	case pod.Spec.NodeName == "":
		if err := e.Pods.DeletePod(ctx, pod); err != nil {
			return &apiError{fmt.Errorf("deleting pod %s of node %s past its timeout: %w", pod.Name, n.Name, err)}
		}
		taskresult.OpenGate(n)
		p.markPhase(n, wfv1.NodeFailed, timeoutMessage)
	default:
		if pod.DeletionTimestamp == nil && (pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds > 1) {
			if err := e.Pods.StopPod(ctx, pod); err != nil {
				return &apiError{fmt.Errorf("stopping pod %s of node %s past its timeout: %w", pod.Name, n.Name, err)}
			}
		}
		// Failed now, as argo records it; the result gate stays closed until the stopped pod reports.
		p.markPhase(n, wfv1.NodeFailed, timeoutMessage)
	}
	return nil
}

// checkLeafOnly rejects timeout on templates that run no pod, and activeDeadlineSeconds on steps and DAG
// templates, with argo's validation messages (argo's validator, when configured, rejects them first).
func checkLeafOnly(wf *wfv1.Workflow) error {
	for _, t := range wf.Spec.Templates {
		if t.IsLeaf() {
			continue
		}
		if t.Timeout != "" {
			return fmt.Errorf("%s template doesn't support timeout field.", t.GetType()) //nolint:staticcheck // argo's message
		}
		if t.ActiveDeadlineSeconds != nil && (t.Steps != nil || t.DAG != nil) {
			return fmt.Errorf("templates.%s.activeDeadlineSeconds is only valid for leaf templates", t.Name)
		}
	}
	return nil
}
