package controller

import (
	"context"
	"errors"
	"fmt"
	"math"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/truncate"
)

// Event reasons of a workflow whose status the API server will never accept.
const (
	ReasonStatusTooLarge = "WorkflowStatusTooLarge"
	ReasonStatusInvalid  = "WorkflowStatusInvalid"
)

// Kinds of permanent write errors.
const (
	writeTooLarge = apierror.TooLarge
	writeInvalid  = apierror.Invalid
)

// maxCauseInMessage bounds the API server's error quoted in a status message (a 422 can quote the value).
const maxCauseInMessage = 512

// classifyWriteError tells a workflow write the API server will never accept (permanent: retrying the same
// object fails the same way) from a transient failure: our own size check (extstatus.ErrTooLarge) is too
// large before the API server sees it, and the rest is what the API server refuses (apierror.Refused).
func classifyWriteError(err error) (kind string, permanent bool) {
	if errors.Is(err, extstatus.ErrTooLarge) {
		return writeTooLarge, true
	}
	return apierror.Refused(err)
}

// Messages of a workflow ended because it cannot be stored. The second is for one that cannot be stored
// even without nodes: what makes it unstorable is what the controller merged into it when it started.
const (
	unstorableMessage       = "workflow status cannot be stored: "
	mergedUnstorableMessage = "workflow cannot be stored with the metadata and spec the controller merged into it " +
		"(the controller ConfigMap's workflowDefaults, spec.workflowMetadata); ended as last stored: "
	unstorableNodeMessage = "stopped: the workflow status cannot be stored"
)

// ConditionUnstorable is the status condition of a workflow ended because it cannot be stored, with the
// same message as the workflow and its Warning Event: argo's SpecError, since what the API server refuses
// comes from the spec (a status it makes too large) or what the controller merged into it.
const ConditionUnstorable = wfv1.ConditionTypeSpecError

// reductions are what is dropped, in turn, from a workflow ended because it cannot be stored until the API
// server takes it: nothing; node inputs and outputs (the usual bulk); nodes.
var reductions = []struct {
	note  string
	strip func(*wfv1.Workflow)
}{
	{"", func(*wfv1.Workflow) {}},
	{" (node inputs and outputs were dropped to fit)", func(wf *wfv1.Workflow) {
		for id, n := range wf.Status.Nodes {
			n.Inputs, n.Outputs = nil, nil
			wf.Status.Nodes[id] = n
		}
	}},
	{" (nodes were dropped to fit)", func(wf *wfv1.Workflow) { wf.Status.Nodes = nil }},
}

// failUnstorable ends a workflow whose pass can never be written: Error with a message saying why, every
// unfinished node Error, a SpecError condition and a Warning Event with the same message, and (after
// persist) its pods released like any completed workflow's. It writes the most of the pass that fits
// (reductions). When even that is refused, the pass's metadata and spec are what the API server refuses:
// at start the controller merges workflowDefaults and workflowMetadata into them, and a 300 KiB default
// annotation is over the API server's limit on every write. The workflow is then ended as last stored,
// without what the pass merged (I10). Anything but a conflict or another permanent error is returned for
// retry.
func (c *Controller) failUnstorable(ctx context.Context, p *pass, cause error) (persistOutcome, error) {
	p.log.Warn("the workflow's status cannot be stored; ending it Error", "err", cause)
	engine.EndWithError(&p.Pass, unstorableMessage+truncate.String(cause.Error(), maxCauseInMessage), unstorableNodeMessage)
	stored, refused, err := c.storeEnded(ctx, p.WF, *p.Ext, p.loaded.resourceVersion)
	if err != nil {
		return dropped, fmt.Errorf("ending workflow %s Error because its status cannot be stored: %w", p.key, err)
	}
	if refused == nil {
		return c.endedUnstorable(p, stored, *p.Ext, cause)
	}
	if p.loaded.wf.Status.Phase.Completed() {
		// A Retry's pass: the stored workflow has ended already, and ending it again would bring the Retry
		// back on every pass.
		c.metrics.persists.WithLabelValues(persistUnstorable).Inc()
		return dropped, fmt.Errorf("writing workflow %s: refused even without nodes: %w", p.key, refused)
	}
	p.log.Warn("the workflow cannot be stored even without nodes; ending it Error as last stored, without what the controller merged into it",
		"err", refused)
	asStored := engine.Pass{WF: p.loaded.wf.DeepCopy(), Now: p.Now}
	engine.EndWithError(&asStored, mergedUnstorableMessage+truncate.String(refused.Error(), maxCauseInMessage), unstorableNodeMessage)
	ext := copyExtensions(p.loaded.ext) // the pass's action records go with the pass's effects: not stored
	stored, last, err := c.storeEnded(ctx, asStored.WF, ext, p.loaded.resourceVersion)
	if err != nil {
		return dropped, fmt.Errorf("ending workflow %s Error as last stored because it cannot be stored with what the controller merged into it: %w", p.key, err)
	}
	if last == nil {
		return c.endedUnstorable(p, stored, ext, refused)
	}
	c.metrics.persists.WithLabelValues(persistUnstorable).Inc()
	return dropped, fmt.Errorf("ending workflow %s Error because its status cannot be stored: even as last stored, without nodes: %w", p.key, last)
}

// storeEnded writes wf, ended Error, with each of the reductions in turn until the API server takes one,
// the SpecError condition carrying its message. It returns the workflow stored, or refused: the last
// permanent refusal when none was taken. err is any other failure (a conflict, a transient error).
func (c *Controller) storeEnded(ctx context.Context, ended *wfv1.Workflow, ext extstatus.Extensions, resourceVersion string) (
	stored *wfv1.Workflow, refused, err error) {
	for i, r := range reductions {
		wf := ended.DeepCopy()
		r.strip(wf)
		wf.Status.Message += r.note
		wf.Status.Conditions.UpsertCondition(wfv1.Condition{Type: ConditionUnstorable, Status: metav1.ConditionTrue, Message: wf.Status.Message})
		wf.ResourceVersion = resourceVersion
		data, err := extstatus.Encode(wf, ext)
		if err != nil {
			return nil, nil, err
		}
		limit := c.opts.MaxWorkflowSize
		if i == len(reductions)-1 {
			limit = math.MaxInt // the API server decides the last try: the spec it stored is not ours to cut
		}
		body, err := extstatus.FitEncoded(wf, ext, data, limit)
		if err != nil {
			refused = err
			continue
		}
		err = c.storeWorkflow(ctx, wf, body)
		if _, permanent := classifyWriteError(err); permanent {
			refused = err
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return wf, nil, nil
	}
	return nil, refused, nil
}

// endedUnstorable makes the pass what was stored, wf and ext, ended because of cause, with its Events.
func (c *Controller) endedUnstorable(p *pass, wf *wfv1.Workflow, ext extstatus.Extensions, cause error) (persistOutcome, error) {
	reason := ReasonStatusTooLarge
	if kind, _ := classifyWriteError(cause); kind == writeInvalid {
		reason = ReasonStatusInvalid
	}
	c.metrics.persists.WithLabelValues(persistUnstorable).Inc()
	p.WF, *p.Ext = wf, ext
	// The pass's own Events announce what was not stored; these say what was. WorkflowFailed is argo's
	// reason for a Failed or Error workflow, kept for tools that watch it.
	p.Events = []engine.Event{{Warning: true, Reason: reason, Message: wf.Status.Message},
		{Warning: true, Reason: engine.ReasonWorkflowFailed, Message: wf.Status.Message}}
	return written, nil
}
