package throttle

import (
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Limits are the caps in force: workflows running cluster-wide and per namespace; 0 is no cap.
type Limits func() (total, perNamespace int)

// Throttle counts admitted workflows (started and not yet completed) by key "namespace/name". A workflow
// that cannot start waits in line; when a slot frees, the best waiting one (highest spec.priority, then
// the oldest, then by key) is admitted and woken. Safe for concurrent use.
type Throttle struct {
	limits Limits
	wake   func(key string)

	mu       sync.Mutex
	admitted map[string]string // key -> namespace
	waiting  map[string]candidate
}

type candidate struct {
	key, namespace string
	priority       int32
	created        time.Time
}

// New builds a Throttle; wake is called (outside the lock) with each waiting key admitted by a freed slot.
func New(limits Limits, wake func(key string)) *Throttle {
	return &Throttle{limits: limits, wake: wake, admitted: map[string]string{}, waiting: map[string]candidate{}}
}

// Admit reports whether the workflow may start now; if not, it waits in line and is woken when admitted.
func (t *Throttle) Admit(wf *wfv1.Workflow) bool {
	key := wf.Namespace + "/" + wf.Name
	t.mu.Lock()
	if _, ok := t.admitted[key]; ok {
		t.mu.Unlock()
		return true
	}
	c := candidate{key: key, namespace: wf.Namespace, created: wf.CreationTimestamp.Time}
	if wf.Spec.Priority != nil {
		c.priority = *wf.Spec.Priority
	}
	t.waiting[key] = c
	woken := t.fill()
	_, ok := t.admitted[key]
	t.mu.Unlock()
	t.notify(woken, key)
	return ok
}

// Running records a workflow that already runs (found at start-up): it holds a slot.
func (t *Throttle) Running(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.admitted[namespace+"/"+name] = namespace
}

// Remove frees the slot (or the place in line) of a completed or deleted workflow.
func (t *Throttle) Remove(key string) {
	t.mu.Lock()
	_, held := t.admitted[key]
	delete(t.admitted, key)
	delete(t.waiting, key)
	var woken []string
	if held {
		woken = t.fill()
	}
	t.mu.Unlock()
	t.notify(woken, "")
}

// Refill admits waiting workflows after the limits were raised.
func (t *Throttle) Refill() {
	t.mu.Lock()
	woken := t.fill()
	t.mu.Unlock()
	t.notify(woken, "")
}

func (t *Throttle) notify(keys []string, self string) {
	for _, k := range keys {
		if k != self && t.wake != nil {
			t.wake(k)
		}
	}
}

// fill admits the best waiting workflows while slots are free. Called with mu held.
func (t *Throttle) fill() []string {
	total, perNamespace := t.limits()
	var admitted []string
	for total <= 0 || len(t.admitted) < total {
		best, ok := t.best(perNamespace)
		if !ok {
			break
		}
		delete(t.waiting, best.key)
		t.admitted[best.key] = best.namespace
		admitted = append(admitted, best.key)
	}
	return admitted
}

// best is the waiting workflow to admit next among those whose namespace has a free slot.
func (t *Throttle) best(perNamespace int) (candidate, bool) {
	running := map[string]int{}
	if perNamespace > 0 {
		for _, ns := range t.admitted {
			running[ns]++
		}
	}
	var best candidate
	found := false
	for _, c := range t.waiting {
		if perNamespace > 0 && running[c.namespace] >= perNamespace {
			continue
		}
		if !found || before(c, best) {
			best, found = c, true
		}
	}
	return best, found
}

func before(a, b candidate) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.key < b.key
}
