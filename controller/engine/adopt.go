package engine

import (
	"context"
	"errors"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// ReasonAdoptionRefused is the Warning Event on a running workflow another controller started that wfguard
// cannot carry on (a feature it refuses, node status it cannot read); the workflow ends Error.
const ReasonAdoptionRefused = "WorkflowAdoptionRefused"

// adoptTimeout bounds the pod stops of a refused adoption.
const adoptTimeout = startTimeout

// adopt checks a running workflow this controller did not start. One it cannot carry on is ended Error with
// the reason, its running pods stopped, rather than run with part of its spec or status ignored.
func (e *Engine) adopt(p *Pass) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adoptTimeout)
	defer cancel()
	reason := notAdoptable(p)
	if reason == "" && !e.startSealed(p) {
		// Not started here: not even by this controller before a restart. Checked as Start checks a new one.
		var err error
		if reason, err = e.checkNotStartedHere(ctx, p); err != nil {
			return false, err
		}
		if reason == "" {
			e.sealStart(p)
		}
	}
	if reason == "" {
		return true, nil
	}
	if err := e.stopAllPods(ctx, p); err != nil {
		return false, err // transient: retried, the workflow still Running
	}
	msg := "wfguard cannot carry on this workflow another controller started: " + reason
	for id := range p.WF.Status.Nodes {
		if n := p.nodeByID(id); !n.Phase.Completed() {
			p.markPhase(n, wfv1.NodeError, msg)
		}
	}
	e.completeWorkflow(p, wfv1.WorkflowError, msg)
	p.Events = append(p.Events, Event{Warning: true, Reason: ReasonAdoptionRefused, Message: msg})
	return false, nil
}

// notAdoptable says why a running workflow cannot be carried on by wfguard, or "" when it can.
func notAdoptable(p *Pass) string {
	wf := p.WF
	if v := wf.Status.OffloadNodeStatusVersion; v != "" {
		return fmt.Sprintf("its node status is offloaded to argo's persistence database (status.offloadNodeStatusVersion %q), "+
			"which wfguard does not read", v)
	}
	restore := p.useExecSpec()
	err := errors.Join(unsupported(wf), unsupportedStored(wf))
	restore()
	if err != nil {
		return err.Error()
	}
	return ""
}

// stopAllPods ends every pod of the workflow still running (or deletes it when no kubelet runs it yet).
func (e *Engine) stopAllPods(ctx context.Context, p *Pass) error {
	for _, pod := range p.Pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
			continue
		}
		stop := e.Pods.StopPod
		if pod.Spec.NodeName == "" {
			stop = e.Pods.DeletePod
		}
		if err := stop(ctx, pod); err != nil {
			return &apiError{fmt.Errorf("stopping pod %s of a workflow wfguard cannot adopt: %w", pod.Name, err)}
		}
	}
	return nil
}
