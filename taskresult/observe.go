package taskresult

import (
	"context"
	"log/slog"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/cenkalti/backoff/v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/reportonce"
)

// Event reasons of the task-result phase.
const (
	ReasonReadPastCache = "TaskResultReadPastCache"
	ReasonIgnored       = "TaskResultIgnored"
)

// DefaultDirectReadBudget caps reads past the cache per workflow pass.
const DefaultDirectReadBudget = 20

// Observer is the task-result phase's I/O: it merges the cached results of a workflow's own pods into its
// nodes, reads past the cache where a node's wait needs it (within a budget per pass), and reports every
// result it ignored. Its wait bookkeeping feeds the gate's metrics.
type Observer struct {
	// Client reads results past the cache.
	Client versioned.Interface
	// Budget caps reads past the cache per pass (DefaultDirectReadBudget when zero).
	Budget   int
	Recorder record.EventRecorder
	Log      *slog.Logger
	Metrics  *Metrics

	reported reportonce.Keys // ignored results already warned about
	mu       sync.Mutex
	waiting  map[string]int // workflow key → nodes waiting for their result
}

// Observation is what one pass saw of its workflow's results.
type Observation struct {
	// Results are the results of the workflow's own pods, by node ID (cache or past it).
	Results map[string]*wfv1.WorkflowTaskResult
	// Unverified marks nodes whose read past the cache could not be made this pass (budget spent, API
	// error): their wait may not expire on the cache's word.
	Unverified map[string]bool
	// WaitingBefore maps each node waiting when the pass began to the start of its wait.
	WaitingBefore map[string]time.Time
	// ReadPastCache names the nodes whose complete result only the read past the cache delivered.
	ReadPastCache []string
	// RequeueSoon asks for another pass shortly: a read was deferred or failed.
	RequeueSoon bool
}

// Observe merges cached into wf's nodes (only results of the pods the controller created, by Merge's rules),
// then reads past the cache every node that NeedsDirectRead. A pod this pass sees ended for the first time
// waits from its finish, which a backlogged queue or a late pod event can put past the deadline already:
// its result is read at once, so the timeout can fire only on what the API server says.
func (o *Observer) Observe(ctx context.Context, wf *wfv1.Workflow, ext *extstatus.Extensions, pods map[string]*corev1.Pod,
	cached []*wfv1.WorkflowTaskResult, now time.Time) Observation {
	obs := Observation{WaitingBefore: WaitingNodes(wf, ext)}
	o.reportIgnored(wf, Merge(wf, cached, pods))
	obs.Results = Owned(wf, cached, pods)

	budget := o.Budget
	if budget <= 0 {
		budget = DefaultDirectReadBudget
	}
	var direct []*wfv1.WorkflowTaskResult
	for id, n := range wf.Status.Nodes {
		since := obs.WaitingBefore[id]
		if pod := pods[id]; since.IsZero() && PodEnded(pod) {
			since = PodFinishedAt(pod)
		}
		if !NeedsDirectRead(&n, pods[id], obs.Results[id], since, now) {
			continue
		}
		if budget <= 0 {
			o.Metrics.directReads.WithLabelValues(directReadOverBudget).Inc()
			obs.unverified(id)
			continue
		}
		budget--
		r, outcome := o.read(ctx, wf.Namespace, id)
		if outcome == directReadError {
			obs.unverified(id)
		}
		if r != nil && len(Owned(wf, []*wfv1.WorkflowTaskResult{r}, pods)) == 0 {
			// Not this node's pod's result (e.g. another workflow UID's): reported by the merge below.
			r, outcome = nil, directReadForeign
		}
		o.Metrics.directReads.WithLabelValues(outcome).Inc()
		if r != nil {
			direct = append(direct, r)
			if Complete(r) && !Complete(obs.Results[id]) {
				obs.ReadPastCache = append(obs.ReadPastCache, n.Name)
			}
		}
	}
	if len(direct) > 0 {
		o.reportIgnored(wf, Merge(wf, direct, pods))
		for id, r := range Owned(wf, direct, pods) {
			obs.Results[id] = r
		}
	}
	return obs
}

func (obs *Observation) unverified(id string) {
	if obs.Unverified == nil {
		obs.Unverified = map[string]bool{}
	}
	obs.Unverified[id] = true
	obs.RequeueSoon = true
}

// read GETs one result from the API server (a quorum read, past any cache), retrying transient errors
// briefly; the outcome labels the read for metrics.
func (o *Observer) read(ctx context.Context, namespace, name string) (*wfv1.WorkflowTaskResult, string) {
	var result *wfv1.WorkflowTaskResult
	op := func() error {
		r, err := o.Client.ArgoprojV1alpha1().WorkflowTaskResults(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) || !apierror.Transient(err) {
				return backoff.Permanent(err)
			}
			return err
		}
		result = r
		return nil
	}
	b := backoff.WithContext(backoff.WithMaxRetries(&backoff.ExponentialBackOff{
		InitialInterval: 20 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 200 * time.Millisecond,
		MaxElapsedTime: time.Second, Stop: backoff.Stop, Clock: backoff.SystemClock}, 3), ctx)
	err := backoff.Retry(op, b)
	switch {
	case err == nil && Complete(result):
		return result, directReadComplete
	case err == nil:
		return result, directReadIncomplete
	case apierrors.IsNotFound(err):
		return nil, directReadNotFound
	default:
		o.Log.Warn("reading a task result past the cache failed", "workflow", namespace, "result", name, "err", err)
		return nil, directReadError
	}
}

// reportIgnored counts results that decided nothing and warns once per result (bad or hostile input,
// never fatal: the node keeps waiting for its own pod's report).
func (o *Observer) reportIgnored(wf *wfv1.Workflow, stats MergeStats) {
	for _, ig := range stats.Ignored {
		o.Metrics.ignoredResults.WithLabelValues(ig.Reason).Inc()
		// Recorded at once, not with the pass's Events: ignoring changes nothing, so the pass may not write.
		if o.reported.First(wf.Namespace + "/" + ig.Name + "/" + ig.Reason) {
			o.Recorder.Eventf(wf, corev1.EventTypeWarning, ReasonIgnored, "Task result %s ignored: %s", ig.Name, ignoredWhy[ig.Reason])
		}
	}
}

// ignoredWhy explains each reason a result is ignored, for the Event.
var ignoredWhy = map[string]string{
	IgnoredForeign:       "it belongs to another workflow UID, workflow or namespace (e.g. a deleted workflow of the same name)",
	IgnoredUnknownNode:   "it names no node of this workflow",
	IgnoredNotAPodNode:   "its node runs no pod, so no executor reports for it; its outputs come from the controller or an action",
	IgnoredNoMatchingPod: "the pod the controller created for its node is not there to have written it",
	IgnoredPredatesPod:   "it was created before its node's pod, so that pod's executor did not write it",
	IgnoredOtherPod:      "the admission policy's stamp (" + AnnotationWriterPodName + ", " + AnnotationWriterPodUID + ") names another pod than the one the controller created for its node",
	IgnoredOtherAccount:  "the admission policy's stamp (" + AnnotationWriterServiceAccount + ") names a ServiceAccount its node's pod does not run argoexec as (executor.serviceAccountName)",
}

// Persisted updates the gate's metrics once a pass of workflow key is written: how long each node that
// was waiting waited, how many timed out, and how many wait now.
func (o *Observer) Persisted(key string, wf *wfv1.Workflow, ext *extstatus.Extensions, waitingBefore map[string]time.Time, timeouts int, now time.Time) {
	for id, since := range waitingBefore {
		if n, ok := wf.Status.Nodes[id]; ok && Synced(&n) {
			o.Metrics.resultWait.Observe(now.Sub(since).Seconds())
		}
	}
	o.Metrics.resultTimeouts.Add(float64(timeouts))
	o.SetWaiting(key, len(WaitingNodes(wf, ext)))
}

// SetWaiting records how many nodes of workflow key wait for their result (0: forget the workflow).
func (o *Observer) SetWaiting(key string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waiting == nil {
		o.waiting = map[string]int{}
	}
	if n == 0 {
		delete(o.waiting, key)
	} else {
		o.waiting[key] = n
	}
	total := 0
	for _, v := range o.waiting {
		total += v
	}
	o.Metrics.waitingNodes.Set(float64(total))
}

// WaitingNodes maps each pod node waiting for its result (gate closed, wait recorded) to when the wait began.
func WaitingNodes(wf *wfv1.Workflow, ext *extstatus.Extensions) map[string]time.Time {
	out := map[string]time.Time{}
	for id, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypePod || Synced(&n) {
			continue
		}
		if since := WaitStart(ext, &n); !since.IsZero() {
			out[id] = since
		}
	}
	return out
}
