package faultinject

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Named crash points at the controller's dangerous steps.
const (
	PointAfterWorkflowPersist   = "after-workflow-persist"   // the pass is stored; outcomes and releases are not
	PointBeforeActionStatus     = "before-action-status"     // an action's effect is stored, its status is not
	PointBeforeFinalizerRelease = "before-finalizer-release" // a pod's capture is stored, its finalizer is not gone
	PointWorker                 = "worker"                   // a worker is about to take a key: pausing it pauses the queue
	PointDuringRetryCleanup     = "during-retry-cleanup"     // a retry deleted the previous run's pods, not yet its task results
)

// ErrCrash is returned by a crash point that "crashes": the caller must stop at once, as a dying process
// would, leaving the rest of the pass undone. In tests the controller is then restarted in-process.
var ErrCrash = errors.New("faultinject: crash point hit")

// Points arms named points: a point can pause (until Release), fail, or crash, a given number of times.
type Points struct {
	mu     sync.Mutex
	armed  map[string]*armedPoint
	hits   map[string]int
	waiter chan struct{}
	// rules, when set, fault a hit that no armed point claims (point rules of an Injector).
	rules func(ctx context.Context, name string) error
}

type armedPoint struct {
	kind    string // pause, error, crash
	times   int    // 0: every hit
	release chan struct{}
}

// NewPoints returns an empty set: every point passes until armed.
func NewPoints() *Points {
	return &Points{armed: map[string]*armedPoint{}, hits: map[string]int{}, waiter: make(chan struct{})}
}

// Crash makes the next `times` hits of name return ErrCrash (0: every hit).
func (p *Points) Crash(name string, times int) { p.arm(name, &armedPoint{kind: "crash", times: times}) }

// Fail makes the next `times` hits of name return an error (the pass is retried with backoff).
func (p *Points) Fail(name string, times int) { p.arm(name, &armedPoint{kind: "error", times: times}) }

// Pause makes hits of name block until Resume(name) (or their context ends).
func (p *Points) Pause(name string) {
	p.arm(name, &armedPoint{kind: "pause", release: make(chan struct{})})
}

// Resume releases a paused point and disarms it.
func (p *Points) Resume(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.armed[name]; ok && a.kind == "pause" {
		close(a.release)
		delete(p.armed, name)
	}
}

// Disarm makes name pass again (a paused point's waiting hits stay paused until Resume).
func (p *Points) Disarm(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.armed[name]; ok && a.kind != "pause" {
		delete(p.armed, name)
	}
}

func (p *Points) arm(name string, a *armedPoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed[name] = a
}

// Hits is how often name was reached (armed or not).
func (p *Points) Hits(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[name]
}

// WaitHit blocks until name has been reached at least n times, or ctx ends: tests wait on it, not on sleeps.
func (p *Points) WaitHit(ctx context.Context, name string, n int) error {
	for {
		p.mu.Lock()
		got, ch := p.hits[name], p.waiter
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for point %s to be hit %d times (hit %d): %w", name, n, got, ctx.Err())
		}
	}
}

// Hit is called by the controller at point name. A nil *Points always passes.
func (p *Points) Hit(ctx context.Context, name string) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.hits[name]++
	close(p.waiter)
	p.waiter = make(chan struct{})
	a := p.armed[name]
	if a != nil && a.kind != "pause" && a.times > 0 {
		a.times--
		if a.times == 0 {
			delete(p.armed, name)
		}
	}
	rules := p.rules
	p.mu.Unlock()
	if a == nil {
		if rules != nil {
			return rules(ctx, name)
		}
		return nil
	}
	switch a.kind {
	case "pause":
		select {
		case <-a.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case "error":
		return fmt.Errorf("faultinject: injected failure at %s", name)
	default:
		return ErrCrash
	}
}

// ArmPoints lets the injector's point rules fault p's hits (those no Crash/Fail/Pause call armed):
// `point name=after-workflow-persist : 1*crash` crashes, `pause ... for=D` holds hits until the rule ends
// or the rules are replaced, `error` fails the pass, `delay(d)` slows it.
func (in *Injector) ArmPoints(p *Points) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = in.hitPoint
}

func (in *Injector) hitPoint(ctx context.Context, name string) error {
	in.mu.Lock()
	changed := in.changed
	in.mu.Unlock()
	r, a, ok := in.decide(SitePoint, "", map[string]string{"name": name}, nil)
	if !ok {
		return nil
	}
	switch a.Kind {
	case ActionDelay:
		select {
		case <-in.clock.After(a.Delay):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case ActionPause:
		select {
		case <-in.clock.After(r.Until.Sub(in.clock.Now())):
		case <-changed:
		case <-in.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	case ActionError:
		return fmt.Errorf("faultinject: injected failure at %s (rule %s)", name, r.Name)
	default:
		in.mu.Lock()
		crash := in.onCrash
		in.mu.Unlock()
		if crash != nil {
			crash(Injection{Rule: r.Name, Site: SitePoint, Key: "point " + name, Action: a, Time: in.clock.Now()})
		}
		return ErrCrash
	}
}
