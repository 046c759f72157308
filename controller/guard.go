package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// DefaultPassDeadline bounds one reconcile pass when Options.PassDeadline is zero: far above a healthy pass
// (milliseconds; a large fan-out of pod creations takes seconds), short enough that a hung call does not
// hold a worker and its key for long.
const DefaultPassDeadline = 2 * time.Minute

// Event reasons of a pass that did not end normally.
const (
	ReasonReconcilePanicked         = "WorkflowReconcilePanicked"
	ReasonReconcileDeadlineExceeded = "WorkflowReconcileDeadlineExceeded"
)

// maxPanicMessage caps the panic text written to status.message and the Event.
const maxPanicMessage = 1024

// markErrorTimeout bounds the write that errors a workflow whose pass panicked.
const markErrorTimeout = 30 * time.Second

// panicked is a recovered panic of one pass.
type panicked struct {
	value any
	stack []byte
}

// guardedReconcile runs one pass under the pass deadline and turns a panic into a value: a bug in one
// workflow's pass must not take down the controller and every other workflow with it.
func (c *Controller) guardedReconcile(ctx context.Context, key string) (requeue time.Duration, p *panicked, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.PassDeadline)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			p = &panicked{value: r, stack: debug.Stack()}
		}
	}()
	requeue, err = c.reconcile(ctx, key)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", errPassDeadline, err)
	}
	return requeue, p, err
}

// errPassDeadline marks a pass abandoned at its deadline: its context was cancelled, so its calls and fault
// points returned early; the key is requeued with backoff.
var errPassDeadline = errors.New("the pass exceeded its deadline and was abandoned")

// handlePanic logs, counts and reports a panicked pass and errors its workflow. It reports whether the
// workflow now records the panic; if not, the caller requeues the key with backoff.
func (c *Controller) handlePanic(ctx context.Context, key string, p *panicked) bool {
	c.metrics.reconciles.WithLabelValues(resultPanic).Inc()
	if am := c.opts.ArgoMetrics; am != nil {
		am.OperationPanicked()
	}
	msg := fmt.Sprintf("the controller panicked reconciling this workflow: %v", p.value)
	if len(msg) > maxPanicMessage {
		// The whole value is in the log; a huge one must not make the Error write itself fail.
		msg = msg[:maxPanicMessage] + "… (truncated; the controller log has it whole)"
	}
	c.log.Error("reconcile panicked; erroring the workflow", "workflow", key, "panic", fmt.Sprint(p.value), "stack", string(p.stack))
	ctx, cancel := context.WithTimeout(ctx, markErrorTimeout)
	defer cancel()
	marked, err := c.markError(ctx, key, msg)
	if err != nil {
		c.log.Error("erroring a workflow whose pass panicked; retrying with backoff", "workflow", key, "err", err)
		return false
	}
	return marked
}

// markError sets a running workflow's phase to Error with msg, from a fresh read so that nothing the
// panicked pass computed is written and nothing stored regresses; a completed or deleted workflow is left
// alone (false). It records a Warning Event on the workflow.
func (c *Controller) markError(ctx context.Context, key, msg string) (bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false, fmt.Errorf("erroring workflow %s: %w", key, err)
	}
	client := c.dynamic.Resource(workflowsResource).Namespace(ns)
	u, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading workflow %s to record its panic: %w", key, err)
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	if wfv1.WorkflowPhase(phase).Completed() || u.GetLabels()[common.LabelKeyCompleted] == "true" {
		return false, nil
	}
	u = u.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, string(wfv1.WorkflowError), "status", "phase")
	_ = unstructured.SetNestedField(u.Object, msg, "status", "message")
	_ = unstructured.SetNestedField(u.Object, c.clock.Now().UTC().Truncate(time.Second).Format(time.RFC3339), "status", "finishedAt")
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[common.LabelKeyCompleted] = "true"
	labels[common.LabelKeyPhase] = string(wfv1.WorkflowError)
	u.SetLabels(labels)
	updated, err := client.Update(ctx, u, updateOptions)
	if err != nil {
		// A conflict included: the next attempt reads again.
		return false, fmt.Errorf("erroring workflow %s after its pass panicked: %w", key, err)
	}
	c.recordWrite(updated)
	c.closeWindow(key)
	c.recorder.Event(updated, corev1.EventTypeWarning, ReasonReconcilePanicked, msg)
	c.metrics.completed.WithLabelValues(string(wfv1.WorkflowError)).Inc()
	return true, nil
}

// reportDeadline records a Warning Event on the workflow of a pass abandoned at its deadline.
func (c *Controller) reportDeadline(key string) {
	obj, ok, err := c.inf.workflows.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return
	}
	c.recorder.Eventf(obj.(*unstructured.Unstructured), corev1.EventTypeWarning, ReasonReconcileDeadlineExceeded,
		"A reconcile pass took longer than %s and was abandoned; it is retried with backoff", c.opts.PassDeadline)
}
