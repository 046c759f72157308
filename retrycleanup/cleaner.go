package retrycleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
)

// Events of the cleanup, mirrored in the workflow's status (it starts, or ends Error with the message).
const (
	ReasonCleanedUp = "RetryCleanedUp"
	ReasonTimeout   = "RetryCleanupTimeout"
)

// DefaultTimeout bounds how long a retried workflow waits for the previous run's pods to go.
const DefaultTimeout = 5 * time.Minute

// cleanedUpMessage is the ReasonCleanedUp Event's message.
const cleanedUpMessage = "The previous run's pods and task results of the retried nodes are gone"

// Config is what a Cleaner needs from the controller that runs it. Every field but Timeout and Points is
// required.
type Config struct {
	Kube kubernetes.Interface
	Argo versioned.Interface
	// Pods is the controller's pod cache, PodsByWorkflowUID the name of its index by owner workflow UID;
	// Results its task-result cache, ResultsByWorkflowKey the name of its index by workflow ("namespace/name").
	Pods                 cache.Indexer
	PodsByWorkflowUID    string
	Results              cache.Indexer
	ResultsByWorkflowKey string
	// Timeout bounds the cleanup, from the Retry on (DefaultTimeout when 0).
	Timeout time.Duration
	// Points are the named crash points (faultinject.PointDuringRetryCleanup); nil passes everywhere.
	Points *faultinject.Points
	Log    *slog.Logger
}

// Cleaner closes the cleanup a Retry opens (status.retryCleanupSince): until the previous run's pods and
// task results of the removed nodes are gone from the API server and the caches, no node may run again
// beside a pod of its own name.
type Cleaner struct {
	cfg Config
}

// New returns a Cleaner.
func New(cfg Config) *Cleaner {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Cleaner{cfg: cfg}
}

// Outcome is what one look at a workflow's cleanup decided.
type Outcome int

const (
	// NotOpen: no Retry's cleanup is open; the workflow runs as usual.
	NotOpen Outcome = iota
	// Open: some of the previous run is left, or could not be checked; nothing may run yet: look again soon.
	Open
	// CleanedUp: the previous run is gone and the cleanup closed: the workflow starts (Event ReasonCleanedUp).
	CleanedUp
	// TimedOut: the bound passed and the cleanup closed: the workflow ends Error with the message (Event
	// ReasonTimeout).
	TimedOut
)

// Result is an Outcome and, for CleanedUp and TimedOut, the message of its Event (and of the workflow).
type Result struct {
	Outcome Outcome
	Message string
}

// CleanUp is one look at wf's open cleanup: it deletes what is left of the previous run, and closes the
// cleanup (clearing ext.RetryCleanupSince) once none of it is left, or once the bound passed. The only
// error returned is a crash point's: the pass stops there, as a dying process would.
func (c *Cleaner) CleanUp(ctx context.Context, wf *wfv1.Workflow, ext *extstatus.Extensions, now time.Time) (Result, error) {
	since := ext.RetryCleanupSince
	if since == nil {
		return Result{Outcome: NotOpen}, nil
	}
	left, err := c.deletePreviousRun(ctx, wf)
	switch {
	case err == nil && len(left) == 0:
		ext.RetryCleanupSince = nil
		return Result{Outcome: CleanedUp, Message: cleanedUpMessage}, nil
	case errors.Is(err, faultinject.ErrCrash):
		return Result{}, err
	case err != nil:
		c.cfg.Log.Warn("cleaning up a retried workflow's previous run", "workflow", keyOf(wf), "err", err)
	}
	bound := c.cfg.Timeout
	if now.Sub(since.Time) < bound {
		return Result{Outcome: Open}, nil
	}
	msg := fmt.Sprintf("retry could not start: the previous run's %v still existed %s after the retry", truncatedList(left), bound)
	if err != nil {
		msg = fmt.Sprintf("retry could not start within %s: %v", bound, err)
	}
	ext.RetryCleanupSince = nil
	return Result{Outcome: TimedOut, Message: msg}, nil
}

// keyOf is the workflow's key, "namespace/name".
func keyOf(wf *wfv1.Workflow) string { return wf.Namespace + "/" + wf.Name }

// truncatedList names at most five items, so a message about thousands of pods stays readable.
func truncatedList(items []string) string {
	if len(items) <= 5 {
		return fmt.Sprint(items)
	}
	return fmt.Sprintf("%v and %d more", items[:5], len(items)-5)
}
