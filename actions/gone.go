package actions

import (
	"context"
	"errors"
	"fmt"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/extstatus"
)

// goneRecords keeps the write-ahead action records of workflows seen deleted until a pass of their key has
// reported them. A workflow deleted between the write that records an action and the write of the action's
// outcome takes the record with it: without this its action would fail WorkflowNotFound although its effect
// was applied (DESIGN.md I3). Only what the delete event carried is known: a workflow deleted while the
// controller was down leaves no record anywhere, and its actions fail WorkflowNotFound.
type goneRecords struct {
	mu    sync.Mutex
	byKey map[string][]goneWorkflow
}

// goneWorkflow is a deleted workflow's last state and the records it held.
type goneWorkflow struct {
	wf      *wfv1.Workflow
	records []extstatus.AppliedAction
}

func (g *goneRecords) put(key string, w goneWorkflow) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byKey == nil {
		g.byKey = map[string][]goneWorkflow{}
	}
	g.byKey[key] = append(g.byKey[key], w)
}

// take removes and returns the deleted workflows of key whose records are not reported yet.
func (g *goneRecords) take(key string) []goneWorkflow {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.byKey[key]
	delete(g.byKey, key)
	return out
}

// KeepGone is part of the workflow cache's delete handler: it keeps the records a deleted workflow holds,
// from the delete event's object, until ReportGone reports them. A workflow without records costs two field
// lookups (the record and its annotation mirror).
func (d *Drainer) KeepGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	// The common case, decided without decoding the workflow. The annotation mirror counts too: argo's CLI
	// rewriting the workflow drops the status field and leaves the mirror (extstatus.AnnotationAppliedActions).
	recs, _, _ := unstructured.NestedSlice(u.Object, "status", "appliedActions")
	mirror, _, _ := unstructured.NestedString(u.Object, "metadata", "annotations", extstatus.AnnotationAppliedActions)
	if len(recs) == 0 && mirror == "" {
		return
	}
	// Without its nodes: the records and the workflow's identity are all a report needs, and this runs in the
	// informer's handler, where inflating a hostile status.compressedNodes would hold every event behind it.
	wf, ext, err := extstatus.WithoutNodes(u)
	if err != nil || len(ext.AppliedActions) == 0 {
		return // undecodable: its actions fail WorkflowNotFound, as they would have
	}
	if records := d.trusted(wf, ext.AppliedActions); len(records) > 0 {
		d.gone.put(u.GetNamespace()+"/"+u.GetName(), goneWorkflow{wf: wf, records: records})
	}
}

// ReportGone writes the recorded outcome of every action a deleted incarnation of key applied and did not
// report. The pipeline calls it first in every pass of the key, before a gone workflow's actions are failed
// (FailOrphans) and before a new workflow of the same name drains them. A failed report is kept for the
// next pass.
func (d *Drainer) ReportGone(ctx context.Context, key string) error {
	var errs []error
	for _, g := range d.gone.take(key) {
		if err := d.Report(ctx, key, g.wf, g.records); err != nil {
			d.gone.put(key, g)
			errs = append(errs, fmt.Errorf("reporting the actions recorded by deleted workflow %s (uid %s): %w", key, g.wf.UID, err))
		}
	}
	return errors.Join(errs...)
}
