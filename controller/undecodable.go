package controller

import (
	"context"
	"errors"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/podidentity"
)

// ReasonWorkflowNodesRefused is the Warning Event on a workflow whose nodes were refused
// (extstatus.RefusedError): its status.compressedNodes states more nodes JSON than its size may inflate to,
// or its nodes, compressed or not, would decode to more than a workflow may take. Recorded once per version.
const ReasonWorkflowNodesRefused = "WorkflowNodesRefused"

// reconcileUndecodable is the flow of a workflow that cannot be decoded. No room in the inflate budget is
// transient: the error retries the pass with backoff. Otherwise refused nodes are reported, a running
// workflow is failed, and a completed one's pods are released by owner, since nothing will ever capture them,
// and its pending actions get their outcome.
func (c *Controller) reconcileUndecodable(ctx context.Context, key string, u *unstructured.Unstructured, completed bool, err error) error {
	if errors.Is(err, extstatus.ErrInflateBudget) {
		return err
	}
	c.reportRefused(u, err)
	if !completed {
		return c.failUndecodable(ctx, u, err)
	}
	released := c.releaser.ReleaseByOwner(ctx, podidentity.Owner{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()})
	wf, ext, decodeErr := extstatus.WithoutNodes(u)
	if decodeErr != nil { // not even without its nodes: its identity and phase still settle its actions
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		wf = &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()},
			Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowPhase(phase)}}
		ext = extstatus.Extensions{}
	}
	return errors.Join(released, c.drainer.SettleUnreadable(ctx, key, wf, ext.AppliedActions, err))
}

// reportRefused records a refusal of u's nodes, once per version of u: the Inflater refuses the same
// compressed bytes again on every pass without reading them, and the same plain JSON after a scan.
func (c *Controller) reportRefused(u *unstructured.Unstructured, err error) {
	var refused *extstatus.RefusedError
	if !errors.As(err, &refused) || !c.refusals.First(versionOf(u)) {
		return
	}
	c.metrics.nodesRefused.WithLabelValues(refused.Reason).Inc()
	c.recorder.Eventf(u, corev1.EventTypeWarning, ReasonWorkflowNodesRefused,
		"%s %v; the workflow's nodes are not read", refused.Field(), refused)
	c.log.Warn("refused the nodes of a workflow", "workflow", u.GetNamespace()+"/"+u.GetName(),
		"uid", u.GetUID(), "resourceVersion", u.GetResourceVersion(), "reason", refused.Reason, "err", err)
}

func versionOf(u metav1.Object) string { return string(u.GetUID()) + "/" + u.GetResourceVersion() }

// failUndecodable fails a workflow whose object argo's types cannot read, keeping the object otherwise intact.
func (c *Controller) failUndecodable(ctx context.Context, u *unstructured.Unstructured, decodeErr error) error {
	u = u.DeepCopy()
	msg := fmt.Sprintf("cannot unmarshall spec: %v", decodeErr) // argo's wording
	_ = unstructured.SetNestedField(u.Object, string(wfv1.WorkflowFailed), "status", "phase")
	_ = unstructured.SetNestedField(u.Object, msg, "status", "message")
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[common.LabelKeyCompleted] = "true"
	labels[common.LabelKeyPhase] = string(wfv1.WorkflowFailed)
	u.SetLabels(labels)
	updated, err := c.dynamic.Resource(workflowsResource).Namespace(u.GetNamespace()).Update(ctx, u, updateOptions)
	if err != nil {
		return fmt.Errorf("failing undecodable workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	c.recordWrite(updated)
	if errors.As(decodeErr, new(*extstatus.RefusedError)) {
		c.refusals.First(versionOf(updated)) // the same nodes, reported with the version they were found in
	}
	c.recorder.Event(updated, corev1.EventTypeWarning, engine.ReasonWorkflowInvalid, msg)
	c.log.Warn("failed an undecodable workflow", "workflow", u.GetNamespace()+"/"+u.GetName(), "err", decodeErr)
	return nil
}
