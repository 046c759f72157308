package actions

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// Collector deletes terminal actions TTL after their completion; pending ones never expire by clock.
type Collector struct {
	// Client deletes the expired actions.
	Client *v1alpha1.Client
	// Actions is the action cache the expired ones are found in.
	Actions cache.Store
	Clock   clock.WithTicker
	// TTL is how long a terminal action is kept after its status.completionTime.
	TTL time.Duration
	// Interval is how often the cache is searched.
	Interval time.Duration
	Log      *slog.Logger
	Metrics  *Metrics
	// AfterPass runs after each search (tests wait on it); nil is nothing.
	AfterPass func()
	// Ours reports whether an expired action is this controller's to delete: false for an action of a
	// workflow another controller instance runs (--instanceid), which that controller expires by its own
	// TTL. An error keeps the action for the next search. Nil: every action in the cache is ours.
	Ours func(ctx context.Context, a *v1alpha1.WorkflowAction) (bool, error)
}

// Run searches every Interval until ctx ends.
func (g *Collector) Run(ctx context.Context) {
	ticker := g.Clock.NewTicker(g.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		g.collect(ctx)
		if g.AfterPass != nil {
			g.AfterPass()
		}
	}
}

// collect deletes the expired actions that are this controller's.
func (g *Collector) collect(ctx context.Context) {
	now := g.Clock.Now()
	for _, o := range g.Actions.List() {
		a := o.(*v1alpha1.WorkflowAction)
		if !a.Status.Terminal() || a.Status.CompletionTime == nil || now.Before(a.Status.CompletionTime.Add(g.TTL)) {
			continue
		}
		if g.Ours != nil {
			ours, err := g.Ours(ctx, a)
			if err != nil {
				g.Log.Warn("checking whose expired workflow action it is", "action", a.Namespace+"/"+a.Name, "err", err)
			}
			if !ours {
				continue
			}
		}
		// The UID precondition spares a new action that took the name since the cache saw this one.
		err := g.Client.Namespace(a.Namespace).Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.UID}})
		switch {
		case err == nil:
			g.Metrics.expired.Inc()
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			g.Log.Warn("deleting an expired workflow action", "action", a.Namespace+"/"+a.Name, "err", err)
		}
	}
}
