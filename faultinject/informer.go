package faultinject

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DelayedWatch wraps a ListerWatcher so that every watch event reaches the informer Delay after the API
// server sent it, in order: the stale store of a lagging watch (slow API server or etcd). Lists are not
// delayed, so caches still sync.
type DelayedWatch struct {
	lw    cache.ListerWatcher
	delay time.Duration
	clock clock.Clock
	// delayed counts events held back so far, for tests to assert the fault took effect.
	delayed atomic.Int64
}

// DelayWatchEvents returns lw with its watch events delayed by delay.
func DelayWatchEvents(lw cache.ListerWatcher, delay time.Duration, clk clock.Clock) *DelayedWatch {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &DelayedWatch{lw: lw, delay: delay, clock: clk}
}

// Delayed is the number of events delivered late so far.
func (d *DelayedWatch) Delayed() int64 { return d.delayed.Load() }

// List is not delayed.
func (d *DelayedWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return cache.ToListerWithContext(d.lw).ListWithContext(context.Background(), opts)
}

// Watch starts the inner watch and holds each event back by the delay.
func (d *DelayedWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := cache.ToWatcherWithContext(d.lw).WatchWithContext(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	w := &delayedWatcher{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(d)
	return w, nil
}

// IsWatchListSemanticsUnSupported keeps the reflector on list+watch: a streamed initial list would be
// delayed too and hold the cache unsynced.
func (d *DelayedWatch) IsWatchListSemanticsUnSupported() bool { return true }

type delayedWatcher struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

type stampedEvent struct {
	ev watch.Event
	at time.Time
}

func (w *delayedWatcher) run(d *DelayedWatch) {
	defer close(w.out)
	in := w.inner.ResultChan()
	var queue []stampedEvent
	for in != nil || len(queue) > 0 {
		var timer <-chan time.Time
		var send chan watch.Event
		var next watch.Event
		if len(queue) > 0 {
			if wait := queue[0].at.Add(d.delay).Sub(d.clock.Now()); wait > 0 {
				timer = d.clock.After(wait)
			} else {
				send, next = w.out, queue[0].ev
			}
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			queue = append(queue, stampedEvent{ev: ev, at: d.clock.Now()})
			d.delayed.Add(1)
		case send <- next:
			queue = queue[1:]
		case <-timer:
		case <-w.stop:
			return
		}
	}
}

func (w *delayedWatcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *delayedWatcher) ResultChan() <-chan watch.Event { return w.out }
