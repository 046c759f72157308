package cronworkflow

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// alarms wakes keys at their next scheduled time on the injected clock (a fake clock in tests), apart from
// the work queue, whose retries run on real time.
type alarms struct {
	clock   clock.Clock
	fire    func(key string)
	changed chan struct{}

	mu    sync.Mutex
	due   map[string]time.Time
	armed time.Time // target of the timer the loop waits on; zero when none
}

func newAlarms(c clock.Clock, fire func(string)) *alarms {
	return &alarms{clock: c, fire: fire, changed: make(chan struct{}, 1), due: map[string]time.Time{}}
}

// set wakes key at t (replacing an earlier setting); a zero t clears it.
func (a *alarms) set(key string, t time.Time) {
	a.mu.Lock()
	if t.IsZero() {
		delete(a.due, key)
	} else {
		a.due[key] = t
	}
	a.mu.Unlock()
	a.wake()
}

// armedAt is when the loop's timer fires next (zero when it waits for no time).
func (a *alarms) armedAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.armed
}

// run fires due keys until ctx ends.
func (a *alarms) run(ctx context.Context) {
	for {
		ready, timer := a.arm()
		for _, key := range ready {
			a.fire(key)
		}
		var tick <-chan time.Time
		if timer != nil {
			tick = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-tick:
		case <-a.changed:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// arm takes the keys already due and starts a timer for the earliest other one. It reads the clock once:
// a clock that moves while the timer starts (any real clock; a fake one stepped by another goroutine) makes
// the timer late by that move, never early. When the move alone reaches the earliest time, the loop is
// woken at once so that key fires now rather than a whole interval late.
func (a *alarms) arm() ([]string, clock.Timer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ready []string
	now := a.clock.Now()
	var earliest time.Time
	for key, t := range a.due {
		if !t.After(now) {
			ready = append(ready, key)
			delete(a.due, key)
		} else if earliest.IsZero() || t.Before(earliest) {
			earliest = t
		}
	}
	a.armed = earliest
	if earliest.IsZero() {
		return ready, nil
	}
	wait := earliest.Sub(now)
	timer := a.clock.NewTimer(wait)
	if a.clock.Since(now) >= wait {
		a.wake()
	}
	return ready, timer
}

// wake makes the loop look at the keys again without waiting for its timer.
func (a *alarms) wake() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}
