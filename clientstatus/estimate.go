package clientstatus

import (
	"strings"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BaselineLabels are the labels argo's estimator looks a workflow's earlier runs up by: the
// WorkflowTemplate, ClusterWorkflowTemplate or CronWorkflow it came from. Argo tries them in a map's
// (random) order; here in this one, so a workflow carrying two is always estimated from the same runs.
var BaselineLabels = []string{common.LabelKeyWorkflowTemplate, common.LabelKeyClusterWorkflowTemplate, common.LabelKeyCronWorkflow}

// Baselines finds the run a workflow's durations are estimated from: the newest (by creationTimestamp)
// workflow of namespace labelled key=value whose phase label is Succeeded, with its nodes decoded; nil
// when there is none. Implementations read a cache, never the API server: a new workflow asks once.
type Baselines func(namespace, key, value string) (*wfv1.Workflow, error)

// Estimate is what a workflow's durations are estimated from: its baseline run's duration and its
// nodes', by the baseline's node IDs. The zero value (no baseline) estimates 0 for everything, as argo's
// estimator does without one.
type Estimate struct {
	// name is the estimated workflow's, baseline's the run's: a node's name in the baseline is its name
	// with the first occurrence of name replaced by baseline's (argo's estimator).
	name     string
	baseline *wfv1.Workflow // only its name: the node IDs of the baseline are derived from it
	workflow wfv1.EstimatedDuration
	nodes    map[string]wfv1.EstimatedDuration
}

// NewEstimate estimates wf from baseline (nil: no estimate): the baseline's duration (finishedAt -
// startedAt, whole seconds) for the workflow and each of its finished nodes' for the node of the same name.
func NewEstimate(wf, baseline *wfv1.Workflow) *Estimate {
	e := &Estimate{name: wf.Name}
	if baseline == nil {
		return e
	}
	e.baseline = &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: baseline.Name}}
	e.workflow = wfv1.NewEstimatedDuration(baseline.Status.GetDuration())
	e.nodes = make(map[string]wfv1.EstimatedDuration, len(baseline.Status.Nodes))
	for id, n := range baseline.Status.Nodes {
		if d := wfv1.NewEstimatedDuration(n.GetDuration()); d > 0 {
			e.nodes[id] = d
		}
	}
	return e
}

// Workflow is the workflow's estimated duration (status.estimatedDuration).
func (e *Estimate) Workflow() wfv1.EstimatedDuration {
	if e == nil {
		return 0
	}
	return e.workflow
}

// Node is the estimated duration of the workflow's node nodeName (its estimatedDuration): 0 when the
// baseline has no finished node of that name.
func (e *Estimate) Node(nodeName string) wfv1.EstimatedDuration {
	if e == nil || e.baseline == nil {
		return 0
	}
	return e.nodes[e.baseline.NodeID(strings.Replace(nodeName, e.name, e.baseline.Name, 1))]
}

// Estimates keeps each running workflow's estimate, computed once, the first time it is asked for (argo
// estimates a workflow when it starts), until Forget.
type Estimates struct {
	find  Baselines
	mu    sync.Mutex
	byUID map[types.UID]*Estimate
}

// NewEstimates estimates from the runs find finds; nil find estimates nothing.
func NewEstimates(find Baselines) *Estimates {
	return &Estimates{find: find, byUID: map[types.UID]*Estimate{}}
}

// For is wf's estimate: the one computed before for its UID, else one from its newest succeeded run of
// the first of BaselineLabels it carries. A failed look-up estimates nothing and is not retried, as argo's
// estimator keeps its default on an error.
func (s *Estimates) For(wf *wfv1.Workflow) *Estimate {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	e, ok := s.byUID[wf.UID]
	s.mu.Unlock()
	if ok {
		return e
	}
	e = NewEstimate(wf, s.baseline(wf))
	s.mu.Lock()
	s.byUID[wf.UID] = e
	s.mu.Unlock()
	return e
}

func (s *Estimates) baseline(wf *wfv1.Workflow) *wfv1.Workflow {
	if s.find == nil {
		return nil
	}
	for _, key := range BaselineLabels {
		value, ok := wf.Labels[key]
		if !ok {
			continue
		}
		b, err := s.find(wf.Namespace, key, value)
		if err != nil || b == nil || b.UID == wf.UID {
			return nil
		}
		return b
	}
	return nil
}

// Forget drops a workflow's estimate: it completed or is gone.
func (s *Estimates) Forget(uid types.UID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.byUID, uid)
	s.mu.Unlock()
}

// Len is how many estimates are kept.
func (s *Estimates) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byUID)
}
