package passdemand

import (
	"sync"
	"time"
)

// Ledger records, per workflow key, what asks for its next pass. Delayed queue entries outlive their
// reason: a pod event queued for the coalescing window, or the late look at our own write's echo, often
// fires after a pass that began later already saw everything it was for. Such an entry runs no pass.
//
// Callers record a change before they queue its key (Changed, then Add): a pass that begins after Changed
// reads a cache that holds the change, since informers update their store before notifying.
type Ledger struct {
	mu   sync.Mutex
	keys map[string]demand
}

type demand struct {
	changed bool      // a change was seen since the last pass began
	due     time.Time // when the last pass asked to run again; zero: it did not
}

// Changed notes a change for key: its next dequeue runs a pass.
func (l *Ledger) Changed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.keys[key]
	d.changed = true
	l.set(key, d)
}

// Requested notes that the pass of key that just ended asks to run again at at (a requeue, a retry). It
// replaces what an earlier pass asked: each pass decides from the whole workflow again.
func (l *Ledger) Requested(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.keys[key]
	d.due = at
	l.set(key, d)
}

// Begin decides whether key, just handed out at now, runs a pass. If it does, everything recorded so far
// is consumed, the time an earlier pass asked for included: this holds only while every pass asks again
// for every time it still needs (the engine recomputes its timers each pass). If not and a requested time
// is still ahead, wait is how long until it: the queue keeps only the earliest delay per key, so the caller
// queues the key again for it.
func (l *Ledger) Begin(key string, now time.Time) (run bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, known := l.keys[key]
	switch {
	case !known || d.changed || (!d.due.IsZero() && !now.Before(d.due)):
		// A key never recorded runs: nothing is known about what it missed.
		l.set(key, demand{})
		return true, 0
	case !d.due.IsZero():
		return false, d.due.Sub(now)
	default:
		return false, 0
	}
}

// set records d for key; the caller holds mu.
func (l *Ledger) set(key string, d demand) {
	if l.keys == nil {
		l.keys = map[string]demand{}
	}
	l.keys[key] = d
}

// Forget drops key, whose workflow is gone; a later dequeue of it runs a pass.
func (l *Ledger) Forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}
