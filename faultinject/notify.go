package faultinject

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// WrapHandler is the controller's WrapHandler seam: the late-notify fault. The store is already fresh when a
// notification of resource matching an informer notify-delay rule reaches h that much later. Notifications
// stay in order, so one held back holds back the ones behind it, as a slow handler would.
func (in *Injector) WrapHandler(resource string, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return &lateHandler{in: in, resource: resource, next: h}
}

type lateHandler struct {
	in       *Injector
	resource string
	next     cache.ResourceEventHandler

	mu      sync.Mutex
	queue   []notification
	last    time.Time // delivery time of the newest queued notification
	running bool      // a delivery goroutine owns the queue
}

type notification struct {
	verb     string // add, update, delete
	old, obj any
	initial  bool
	at       time.Time
}

func (h *lateHandler) OnAdd(obj any, isInInitialList bool) {
	h.notify(notification{verb: "add", obj: obj, initial: isInInitialList})
}

func (h *lateHandler) OnUpdate(old, obj any) {
	h.notify(notification{verb: "update", old: old, obj: obj})
}

func (h *lateHandler) OnDelete(obj any) { h.notify(notification{verb: "delete", obj: obj}) }

func (h *lateHandler) notify(n notification) {
	now := h.in.clock.Now()
	n.at = now
	obj := n.obj
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, err := meta.Accessor(obj); err == nil {
		call := map[string]string{"verb": n.verb, "resource": h.resource, "namespace": o.GetNamespace(), "name": o.GetName()}
		if _, a, ok := h.in.decide(SiteInformer, StageNotify, call, func() string { return workflowOf(h.resource, o) }); ok {
			n.at = now.Add(a.Delay)
		}
	}
	h.mu.Lock()
	if len(h.queue) == 0 && !h.running && !n.at.After(now) {
		h.mu.Unlock()
		h.deliver(n) // nothing held back: deliver on the informer's own goroutine, as without faults
		return
	}
	if n.at.Before(h.last) {
		n.at = h.last
	}
	h.last = n.at
	h.queue = append(h.queue, n)
	if !h.running {
		h.running = true
		h.in.wg.Add(1)
		go h.run()
	}
	h.mu.Unlock()
}

// run delivers held-back notifications when due and ends when the queue is empty (or the injector closes).
func (h *lateHandler) run() {
	defer h.in.wg.Done()
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		n := h.queue[0]
		if wait := n.at.Sub(h.in.clock.Now()); wait > 0 {
			h.mu.Unlock()
			select {
			case <-h.in.clock.After(wait):
			case <-h.in.done:
				h.mu.Lock()
				h.queue, h.running = nil, false
				h.mu.Unlock()
				return
			}
			continue
		}
		h.queue = h.queue[1:]
		h.mu.Unlock()
		h.deliver(n)
	}
}

func (h *lateHandler) deliver(n notification) {
	switch n.verb {
	case "add":
		h.next.OnAdd(n.obj, n.initial)
	case "update":
		h.next.OnUpdate(n.old, n.obj)
	default:
		h.next.OnDelete(n.obj)
	}
}
