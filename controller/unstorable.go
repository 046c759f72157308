package controller

import (
	"context"
	"errors"
	"fmt"
	"math"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

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

// failUnstorable ends a workflow whose pass can never be written: Error with a message saying why, every
// unfinished node Error, a Warning Event, and (after persist) its pods released like any completed
// workflow's. It writes the most of the pass that fits: all nodes; else nodes without inputs and outputs
// (the usual bulk); else no nodes. Anything but a conflict or another permanent error is returned for retry.
func (c *Controller) failUnstorable(ctx context.Context, p *pass, cause error) (persistOutcome, error) {
	kind, _ := classifyWriteError(cause)
	reason := ReasonStatusTooLarge
	if kind == writeInvalid {
		reason = ReasonStatusInvalid
	}
	c.log.Warn("the workflow's status cannot be stored; ending it Error", "workflow", p.key, "err", cause)
	message := "workflow status cannot be stored: " + truncate.String(cause.Error(), maxCauseInMessage)
	engine.EndWithError(&p.Pass, message, "stopped: the workflow status cannot be stored")
	attempts := []struct {
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
	last := cause
	for i, a := range attempts {
		wf := p.WF.DeepCopy()
		a.strip(wf)
		wf.Status.Message += a.note
		wf.ResourceVersion = p.loaded.resourceVersion
		data, err := extstatus.Encode(wf, *p.Ext)
		if err != nil {
			return dropped, err
		}
		limit := c.opts.MaxWorkflowSize
		if i == len(attempts)-1 {
			limit = math.MaxInt // the API server decides the last try: the spec it stored is not ours to cut
		}
		body, err := extstatus.FitEncoded(wf, *p.Ext, data, limit)
		if err != nil {
			last = err
			continue
		}
		err = c.storeWorkflow(ctx, wf, body)
		if _, permanent := classifyWriteError(err); permanent {
			last = err
			continue
		}
		if err != nil {
			return dropped, fmt.Errorf("ending workflow %s Error because its status cannot be stored: %w", p.key, err)
		}
		c.metrics.persists.WithLabelValues(persistUnstorable).Inc()
		p.WF = wf
		// The pass's own Events announce what was not stored; these say what was. WorkflowFailed is argo's
		// reason for a Failed or Error workflow, kept for tools that watch it.
		p.Events = []engine.Event{{Warning: true, Reason: reason, Message: wf.Status.Message},
			{Warning: true, Reason: engine.ReasonWorkflowFailed, Message: wf.Status.Message}}
		return written, nil
	}
	c.metrics.persists.WithLabelValues(persistUnstorable).Inc()
	return dropped, fmt.Errorf("ending workflow %s Error because its status cannot be stored: even without nodes: %w", p.key, last)
}
