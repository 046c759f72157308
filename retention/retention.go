package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Workflow is what retention knows of a completed workflow.
type Workflow struct {
	Namespace, Name string
	UID             types.UID
	Phase           wfv1.WorkflowPhase
	Created         metav1.Time
}

// Excess are the workflows to delete: per phase (Succeeded counted against completed, Failed against
// failed, Error against errored), the oldest beyond the count. A nil policy keeps every workflow; a count
// of zero in a set policy keeps none of that phase, as in argo.
func Excess(workflows []Workflow, policy *config.RetentionPolicy) []Workflow {
	if policy == nil {
		return nil
	}
	keep := map[wfv1.WorkflowPhase]int{wfv1.WorkflowSucceeded: policy.Completed, wfv1.WorkflowFailed: policy.Failed, wfv1.WorkflowError: policy.Errored}
	byPhase := map[wfv1.WorkflowPhase][]Workflow{}
	for _, wf := range workflows {
		if _, ok := keep[wf.Phase]; ok {
			byPhase[wf.Phase] = append(byPhase[wf.Phase], wf)
		}
	}
	var out []Workflow
	for _, phase := range []wfv1.WorkflowPhase{wfv1.WorkflowSucceeded, wfv1.WorkflowFailed, wfv1.WorkflowError} {
		wfs := byPhase[phase]
		if len(wfs) <= keep[phase] {
			continue
		}
		sort.Slice(wfs, func(i, j int) bool { // newest first
			if !wfs[i].Created.Equal(&wfs[j].Created) {
				return wfs[j].Created.Before(&wfs[i].Created)
			}
			return wfs[i].Namespace+"/"+wfs[i].Name < wfs[j].Namespace+"/"+wfs[j].Name
		})
		out = append(out, wfs[keep[phase]:]...)
	}
	return out
}

// Collector applies the policy in force whenever triggered, on one goroutine (Run).
type Collector struct {
	// Completed lists the completed workflows the controller sees (its informer).
	Completed func() []Workflow
	// Policy is the controller ConfigMap's retentionPolicy in force; nil keeps every workflow.
	Policy func() *config.RetentionPolicy
	// Delete deletes one workflow, only if it still has that UID.
	Delete  func(ctx context.Context, namespace, name string, uid types.UID) error
	Log     *slog.Logger
	metrics *metrics
	trigger chan struct{}
}

// NewCollector registers the collector's metrics on reg.
func NewCollector(c Collector, reg prometheus.Registerer) (*Collector, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	c.metrics, c.trigger = m, make(chan struct{}, 1)
	return &c, nil
}

// Trigger asks for a pass; triggers made before it starts share it.
func (c *Collector) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run collects on each trigger until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
			if err := c.Collect(ctx); err != nil {
				c.Log.Warn("applying the retention policy", "err", err)
			}
		}
	}
}

// Collect deletes the workflows beyond the policy's counts.
func (c *Collector) Collect(ctx context.Context) error {
	policy := c.Policy()
	if policy == nil {
		return nil
	}
	var errs []error
	for _, wf := range Excess(c.Completed(), policy) {
		err := c.Delete(ctx, wf.Namespace, wf.Name, wf.UID)
		switch {
		case err == nil:
			c.metrics.deleted.WithLabelValues(string(wf.Phase)).Inc()
			c.Log.Info("deleted a workflow beyond the retention policy", "workflow", wf.Namespace+"/"+wf.Name, "phase", wf.Phase)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// gone already, or a new workflow of the same name
		default:
			errs = append(errs, fmt.Errorf("deleting workflow %s/%s beyond the retention policy: %w", wf.Namespace, wf.Name, err))
		}
	}
	return errors.Join(errs...)
}

// FromLabels reads the phase the way argo's collector does: from the workflow's phase label.
func FromLabels(namespace, name string, uid types.UID, labels map[string]string, created metav1.Time) Workflow {
	return Workflow{Namespace: namespace, Name: name, UID: uid, Phase: wfv1.WorkflowPhase(labels[common.LabelKeyPhase]), Created: created}
}
