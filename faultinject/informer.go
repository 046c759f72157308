package faultinject

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// eventFault decides what happens to one watch event: nothing (ok false), delay(d), drop or reset.
type eventFault func(ev watch.Event) (Action, bool)

// faultyListWatch wraps a ListerWatcher: lists pass through, watch events go through decide.
type faultyListWatch struct {
	lw     cache.ListerWatcher
	clock  clock.Clock
	decide eventFault
}

// List is never faulted here (the api site faults list calls), so caches can sync and relists succeed.
func (f *faultyListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return cache.ToListerWithContext(f.lw).ListWithContext(context.Background(), opts)
}

// Watch starts the inner watch and applies the event faults to its stream.
func (f *faultyListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := cache.ToWatcherWithContext(f.lw).WatchWithContext(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	w := &faultyWatcher{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(f)
	return w, nil
}

// IsWatchListSemanticsUnSupported keeps the reflector on list+watch: a streamed initial list would go
// through the faults too and could hold the cache unsynced.
func (f *faultyListWatch) IsWatchListSemanticsUnSupported() bool { return true }

type faultyWatcher struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

type stampedEvent struct {
	ev watch.Event
	at time.Time // when it may be delivered
}

// expired is what the API server sends when a watch's resource version was compacted away: the reflector
// answers it with a fresh list, which is the point of a reset.
func expired() watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "injected fault: watch reset (resource version expired); relist",
	}}
}

// run delivers events in order: a delayed event holds back the ones behind it, as a lagging stream would.
func (w *faultyWatcher) run(f *faultyListWatch) {
	defer close(w.out)
	in := w.inner.ResultChan()
	var queue []stampedEvent
	var last time.Time // delivery time of the newest queued event: nothing overtakes it
	push := func(ev watch.Event, at time.Time) {
		if at.Before(last) {
			at = last
		}
		last = at
		queue = append(queue, stampedEvent{ev: ev, at: at})
	}
	for in != nil || len(queue) > 0 {
		var timer <-chan time.Time
		var send chan watch.Event
		var next watch.Event
		if len(queue) > 0 {
			if wait := queue[0].at.Sub(f.clock.Now()); wait > 0 {
				timer = f.clock.After(wait)
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
			now := f.clock.Now()
			if ev.Type == watch.Bookmark || ev.Type == watch.Error {
				push(ev, now)
				continue
			}
			a, fired := f.decide(ev)
			switch {
			case !fired:
				push(ev, now)
			case a.Kind == ActionDelay:
				push(ev, now.Add(a.Delay))
			case a.Kind == ActionReset:
				// The stream breaks here: this event and any later ones are lost until the relist.
				push(expired(), now)
				w.inner.Stop()
				in = nil
			}
			// ActionDrop: the event never reaches the store; the next relist (or resync of a later event) repairs it.
		case send <- next:
			queue = queue[1:]
		case <-timer:
		case <-w.stop:
			return
		}
	}
}

func (w *faultyWatcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *faultyWatcher) ResultChan() <-chan watch.Event { return w.out }

// WrapListWatch is the controller's WrapListWatch seam: the watch events of resource go through the
// injector's informer rules of the watch stage (delay in order, drop, reset to force a relist). Lists pass
// through. The rules are read per event, so a later SetRules takes effect on running watches.
func (in *Injector) WrapListWatch(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
	return &faultyListWatch{lw: lw, clock: in.clock, decide: func(ev watch.Event) (Action, bool) {
		o, err := meta.Accessor(ev.Object)
		if err != nil {
			return Action{}, false
		}
		call := map[string]string{"verb": strings.ToLower(string(ev.Type)), "resource": resource,
			"namespace": o.GetNamespace(), "name": o.GetName()}
		_, a, ok := in.decide(SiteInformer, StageWatch, call, func() string { return workflowOf(resource, o) })
		return a, ok
	}}
}

// workflowOf ties an informer object to its workflow: a workflow is its own, pods and results carry the label.
func workflowOf(resource string, o metav1.Object) string {
	if resource == "workflows" {
		return o.GetNamespace() + "/" + o.GetName()
	}
	if wf := o.GetLabels()[workflowLabel]; wf != "" {
		return o.GetNamespace() + "/" + wf
	}
	return ""
}

// DelayedWatch wraps a ListerWatcher so that every watch event reaches the informer Delay after the API
// server sent it, in order: the stale store of a lagging watch (slow API server or etcd). Lists are not
// delayed, so caches still sync. It needs no rules (tests and benchmarks build it directly).
type DelayedWatch struct {
	faultyListWatch
	// delayed counts events held back so far, for tests to assert the fault took effect.
	delayed atomic.Int64
}

// DelayWatchEvents returns lw with its watch events delayed by delay.
func DelayWatchEvents(lw cache.ListerWatcher, delay time.Duration, clk clock.Clock) *DelayedWatch {
	if clk == nil {
		clk = clock.RealClock{}
	}
	d := &DelayedWatch{faultyListWatch: faultyListWatch{lw: lw, clock: clk}}
	d.decide = func(watch.Event) (Action, bool) {
		d.delayed.Add(1)
		return Action{Kind: ActionDelay, Delay: delay}, true
	}
	return d
}

// Delayed is the number of events delivered late so far.
func (d *DelayedWatch) Delayed() int64 { return d.delayed.Load() }
