package synchronization

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// ErrNoLimit is a semaphore first asked for whose limit could not be read (or is not positive).
var ErrNoLimit = errors.New("no limit")

// Request is one holder's ask for every lock of one synchronization spec: all of them or none.
type Request struct {
	// Holder is the HolderKey asking.
	Holder string
	// Priority and Created order the waiters as argo does: higher priority first, then older workflows.
	Priority int32
	Created  time.Time
	Locks    []Lock
	// Limits are the semaphores' limits by lock key, as just read from their ConfigMaps (0: unreadable).
	Limits map[string]int
}

// Manager is the controller's table of locks. It does no I/O: the caller reads semaphore limits, and
// Notify (e.g. the workqueue's Add) is told which workflow may now acquire what it waits for.
type Manager struct {
	// Notify is called with a workflow's namespace/name when a lock it waits for may be free.
	Notify func(workflowKey string)

	mu    sync.Mutex
	locks map[string]*lock
	seq   uint64
}

// lock is one mutex (limit 1) or semaphore with its holders and its queue of waiters.
type lock struct {
	key     string
	limit   int
	holders map[string]bool
	pending []waiter
}

type waiter struct {
	holder   string
	priority int32
	created  time.Time
	seq      uint64
}

// NewManager returns an empty Manager.
func NewManager(notify func(workflowKey string)) *Manager {
	return &Manager{Notify: notify, locks: map[string]*lock{}}
}

// TryAcquire takes every lock of req for its holder, or none; st (the workflow's status.synchronization,
// created if nil) records holders and waiters as argo does. Not acquired, it returns argo's waiting message
// and the lock waited for. An error means a lock cannot be set up (an unreadable semaphore limit).
func (m *Manager) TryAcquire(st **wfv1.SynchronizationStatus, req Request) (acquired bool, msg, waitingFor string, err error) {
	var wake []string
	defer func() { m.notify(wake) }()
	m.mu.Lock()
	defer m.mu.Unlock()
	locks := make([]*lock, len(req.Locks))
	for i, l := range req.Locks {
		if locks[i], err = m.lockFor(l, req.Limits[l.Key]); err != nil {
			for _, lk := range locks[:i] {
				lk.dequeue(req.Holder) // all or none: no place kept in the queues set up before
			}
			return false, "", l.Key, err
		}
		m.enqueue(locks[i], req)
		ensureStatus(st, l.Type)
	}
	for i, lk := range locks {
		ok, why, front := lk.check(req.Holder)
		if front != "" {
			wake = append(wake, front)
		}
		if !ok && msg == "" {
			msg, waitingFor = why, req.Locks[i].Key
		}
	}
	if msg != "" {
		for i, lk := range locks {
			(*st).GetStatus(req.Locks[i].Type).LockWaiting(req.Holder, lk.key, lk.holderKeys())
		}
		return false, msg, waitingFor, nil
	}
	for i, lk := range locks {
		lk.take(req.Holder)
		(*st).GetStatus(req.Locks[i].Type).LockAcquired(req.Holder, lk.key, lk.holderKeys())
		wake = append(wake, lk.wakeable()...)
	}
	return true, "", "", nil
}

// lockFor finds or sets up a lock, refreshing a semaphore's limit when one was read.
func (m *Manager) lockFor(l Lock, limit int) (*lock, error) {
	lk := m.locks[l.Key]
	if l.Kind == KindMutex {
		limit = 1
	}
	if lk == nil {
		if limit <= 0 {
			return nil, ErrNoLimit
		}
		lk = &lock{key: l.Key, limit: limit, holders: map[string]bool{}}
		m.locks[l.Key] = lk
	}
	lk.limit = limit
	return lk, nil
}

// enqueue adds the holder to a lock's waiters unless it holds the lock or already waits.
func (m *Manager) enqueue(lk *lock, req Request) {
	if lk.holders[req.Holder] || slices.ContainsFunc(lk.pending, func(w waiter) bool { return w.holder == req.Holder }) {
		return
	}
	m.seq++
	lk.pending = append(lk.pending, waiter{holder: req.Holder, priority: req.Priority, created: req.Created, seq: m.seq})
	sort.SliceStable(lk.pending, func(i, j int) bool { return lk.pending[i].before(lk.pending[j]) })
}

func (w waiter) before(o waiter) bool {
	if w.priority != o.priority {
		return w.priority > o.priority
	}
	if !w.created.Equal(o.created) {
		return w.created.Before(o.created)
	}
	return w.seq < o.seq
}

// check tells whether holder may take the lock now: it has room and the first waiter is of holder's own
// workflow (argo lets a workflow's nodes pass each other, not other workflows). front is a workflow to
// wake when the lock has room but another workflow is first in line.
func (lk *lock) check(holder string) (ok bool, msg, front string) {
	if lk.holders[holder] {
		return true, "", ""
	}
	if lk.limit <= 0 {
		return false, fmt.Sprintf("Failed to get semaphore limit for %s", lk.key), ""
	}
	msg = fmt.Sprintf("Waiting for %s lock. Lock status: %d/%d", lk.key, lk.limit-len(lk.holders), lk.limit)
	room := len(lk.holders) < lk.limit
	if len(lk.pending) > 0 && !sameWorkflowLevel(lk.pending[0].holder, holder) {
		if room {
			front = WorkflowKey(lk.pending[0].holder)
		}
		return false, msg, front
	}
	return room, msg, ""
}

// sameWorkflowLevel: both keys are of one workflow and of the same level (workflow or template), as
// argo's queue compares them.
func sameWorkflowLevel(a, b string) bool {
	return WorkflowKey(a) == WorkflowKey(b) && (NodeID(a) == "") == (NodeID(b) == "")
}

func (lk *lock) take(holder string) {
	lk.holders[holder] = true
	lk.dequeue(holder)
}

func (lk *lock) dequeue(holder string) {
	lk.pending = slices.DeleteFunc(lk.pending, func(w waiter) bool { return w.holder == holder })
}

// wakeable are the workflows of the waiters the lock has room for.
func (lk *lock) wakeable() []string {
	var out []string
	for i := 0; i < len(lk.pending) && i < lk.limit-len(lk.holders); i++ {
		out = append(out, WorkflowKey(lk.pending[i].holder))
	}
	return out
}

func (lk *lock) holderKeys() []string {
	out := make([]string, 0, len(lk.holders))
	for h := range lk.holders {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func ensureStatus(st **wfv1.SynchronizationStatus, t wfv1.SynchronizationType) {
	if *st == nil {
		*st = &wfv1.SynchronizationStatus{}
	}
	if t == wfv1.SynchronizationTypeSemaphore && (*st).Semaphore == nil {
		(*st).Semaphore = &wfv1.SemaphoreStatus{}
	}
	if t == wfv1.SynchronizationTypeMutex && (*st).Mutex == nil {
		(*st).Mutex = &wfv1.MutexStatus{}
	}
}

// Release gives up holder's locks of locks and its place in their queues, recording it in st.
func (m *Manager) Release(st *wfv1.SynchronizationStatus, holder string, locks []Lock) {
	var wake []string
	defer func() { m.notify(wake) }()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range locks {
		lk := m.locks[l.Key]
		if lk == nil {
			continue
		}
		wake = append(wake, lk.release(holder)...)
		if st != nil && st.GetStatus(l.Type) != nil {
			st.GetStatus(l.Type).LockReleased(holder, l.Key)
		}
	}
}

// release frees holder's slot and queue place; it returns the workflows that may now acquire.
func (lk *lock) release(holder string) []string {
	lk.dequeue(holder)
	if !lk.holders[holder] {
		return nil
	}
	delete(lk.holders, holder)
	return lk.wakeable()
}

// ReleaseWorkflow frees every lock a workflow's holders (its own key and its nodes') have or wait for: the
// workflow completed or is gone.
func (m *Manager) ReleaseWorkflow(workflowKey string) {
	var wake []string
	defer func() { m.notify(wake) }()
	m.mu.Lock()
	defer m.mu.Unlock()
	mine := func(holder string) bool { return WorkflowKey(holder) == workflowKey }
	for _, lk := range m.locks {
		lk.pending = slices.DeleteFunc(lk.pending, func(w waiter) bool { return mine(w.holder) })
		for _, h := range lk.holderKeys() {
			if mine(h) {
				wake = append(wake, lk.release(h)...)
			}
		}
	}
}

// Holding lists a workflow's holders recorded in its status, each with its lock key and type.
func Holding(st *wfv1.SynchronizationStatus) []Held {
	var out []Held
	if st == nil {
		return nil
	}
	if st.Semaphore != nil {
		for _, h := range st.Semaphore.Holding {
			for _, holder := range h.Holders {
				out = append(out, Held{Holder: holder, Key: h.Semaphore, Type: wfv1.SynchronizationTypeSemaphore})
			}
		}
	}
	if st.Mutex != nil {
		for _, h := range st.Mutex.Holding {
			if h.Holder != "" {
				out = append(out, Held{Holder: h.Holder, Key: h.Mutex, Type: wfv1.SynchronizationTypeMutex})
			}
		}
	}
	return out
}

// Held is one lock a holder has, as recorded in a workflow's status.
type Held struct {
	Holder, Key string
	Type        wfv1.SynchronizationType
}

// Restore records the holders a running workflow's status says it has, so a restarted controller keeps
// their locks taken. A semaphore's limit is unknown until someone next asks for it; meanwhile it admits
// no one new. Holder keys in argo's older form (no namespace) are not restored.
func (m *Manager) Restore(wf *wfv1.Workflow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := wf.Namespace + "/" + wf.Name
	for _, h := range Holding(wf.Status.Synchronization) {
		if h.Holder != prefix && !strings.HasPrefix(h.Holder, prefix+"/") {
			continue
		}
		lk := m.locks[h.Key]
		if lk == nil {
			lk = &lock{key: h.Key, holders: map[string]bool{}}
			if h.Type == wfv1.SynchronizationTypeMutex {
				lk.limit = 1
			}
			m.locks[h.Key] = lk
		}
		lk.holders[h.Holder] = true
	}
}

func (m *Manager) notify(keys []string) {
	if m.Notify == nil {
		return
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			m.Notify(k)
		}
	}
}
