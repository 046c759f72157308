package synchronization

import (
	"errors"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apiv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func mutex(ns, name string) Lock {
	return mutexLock(&wfv1.Mutex{Name: name}, ns)
}

func semaphore(ns, cm, key string) Lock {
	l, err := semaphoreLock(&wfv1.SemaphoreRef{ConfigMapKeyRef: &apiv1.ConfigMapKeySelector{
		LocalObjectReference: apiv1.LocalObjectReference{Name: cm}, Key: key}}, ns)
	if err != nil {
		panic(err)
	}
	return l
}

// step is one ask or release of a scenario, and what it must give.
type step struct {
	holder  string
	release bool
	created time.Time
	limit   int
	want    bool   // acquired
	wantMsg string // the waiting message, when not acquired
}

// Locks are granted as argo grants them: a mutex to one holder at a time, a semaphore to its limit, in
// line by priority then age, and the next in line is woken when a holder lets go.
func TestLocksAreGrantedInArgosOrderAndWakeTheNextInLine(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		lock     Lock
		steps    []step
		wantWoke []string
	}{
		{"a mutex is held by one workflow and the second waits with argo's message", mutex("ns", "m"), []step{
			{holder: "ns/a", created: t0, want: true},
			{holder: "ns/b", created: t0.Add(time.Second), wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 0/1"},
		}, nil},
		{"a released mutex goes to the waiter, who is woken", mutex("ns", "m"), []step{
			{holder: "ns/a", created: t0, want: true},
			{holder: "ns/b", created: t0.Add(time.Second), wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 0/1"},
			{holder: "ns/a", release: true},
			{holder: "ns/b", created: t0.Add(time.Second), want: true},
		}, []string{"ns/b"}},
		{"an older waiter passes a younger one that asks first after a release", mutex("ns", "m"), []step{
			{holder: "ns/a", created: t0, want: true},
			{holder: "ns/young", created: t0.Add(2 * time.Second), wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 0/1"},
			{holder: "ns/old", created: t0.Add(time.Second), wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 0/1"},
			{holder: "ns/a", release: true},
			{holder: "ns/young", created: t0.Add(2 * time.Second), wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 1/1"},
			{holder: "ns/old", created: t0.Add(time.Second), want: true},
		}, []string{"ns/old"}},
		{"a semaphore admits holders up to its ConfigMap limit", semaphore("ns", "cm", "k"), []step{
			{holder: "ns/w/n1", created: t0, limit: 2, want: true},
			{holder: "ns/w/n2", created: t0, limit: 2, want: true},
			{holder: "ns/w/n3", created: t0, limit: 2, wantMsg: "Waiting for ns/ConfigMap/cm/k lock. Lock status: 0/2"},
		}, nil},
		{"nodes of one workflow pass each other in the queue", mutex("ns", "m"), []step{
			{holder: "ns/w/n1", created: t0, want: true},
			{holder: "ns/w/n2", created: t0, wantMsg: "Waiting for ns/Mutex/m lock. Lock status: 0/1"},
			{holder: "ns/w/n1", release: true},
			{holder: "ns/w/n3", created: t0, want: true},
		}, []string{"ns/w"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var woke []string
			m := NewManager(func(k string) { woke = append(woke, k) })
			var st *wfv1.SynchronizationStatus
			for i, s := range tc.steps {
				if s.release {
					m.Release(st, s.holder, []Lock{tc.lock})
					continue
				}
				got, msg, _, err := m.TryAcquire(&st, Request{Holder: s.holder, Created: s.created, Locks: []Lock{tc.lock},
					Limits: map[string]int{tc.lock.Key: s.limit}})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got != s.want || msg != s.wantMsg {
					t.Fatalf("step %d (%s): acquired %v %q, want %v %q", i, s.holder, got, msg, s.want, s.wantMsg)
				}
			}
			slices.Sort(woke)
			woke = slices.Compact(woke) // a workflow may be woken more than once: each wake-up is a pass, harmless
			if !slices.Equal(woke, tc.wantWoke) {
				t.Fatalf("woke %v, want %v", woke, tc.wantWoke)
			}
		})
	}
}

// What a workflow holds is recorded in its status in argo's form, and that record alone keeps the lock
// taken after a restart.
func TestHoldersAreRecordedInStatusAndSurviveARestart(t *testing.T) {
	m := NewManager(nil)
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	l := mutex("ns", "m")
	if ok, _, _, err := m.TryAcquire(&wf.Status.Synchronization, Request{Holder: HolderKey(wf, ""), Locks: []Lock{l}}); !ok || err != nil {
		t.Fatalf("first ask: %v %v", ok, err)
	}
	if h := wf.Status.Synchronization.Mutex.Holding; len(h) != 1 || h[0].Mutex != "ns/Mutex/m" || h[0].Holder != "ns/a" {
		t.Fatalf("status holding %+v, want ns/a holding ns/Mutex/m", h)
	}
	restarted := NewManager(nil)
	restarted.Restore(wf)
	var st *wfv1.SynchronizationStatus
	if ok, msg, _, _ := restarted.TryAcquire(&st, Request{Holder: "ns/b", Locks: []Lock{l}}); ok {
		t.Fatal("after a restart another workflow took a lock whose holder is recorded in status")
	} else if msg != "Waiting for ns/Mutex/m lock. Lock status: 0/1" {
		t.Fatalf("message %q", msg)
	}
	restarted.ReleaseWorkflow("ns/a")
	if ok, _, _, _ := restarted.TryAcquire(&st, Request{Holder: "ns/b", Locks: []Lock{l}}); !ok {
		t.Fatal("the lock was not free once its holder's workflow was released")
	}
}

// A semaphore whose limit cannot be read is not set up (the caller fails with argo's message), and an ask
// for several locks takes all of them or none.
func TestASemaphoreWithoutALimitIsRefusedAndTakesNothing(t *testing.T) {
	m := NewManager(nil)
	var st *wfv1.SynchronizationStatus
	locks := []Lock{mutex("ns", "m"), semaphore("ns", "missing", "k")}
	_, _, failed, err := m.TryAcquire(&st, Request{Holder: "ns/a", Locks: locks, Limits: map[string]int{}})
	if !errors.Is(err, ErrNoLimit) || failed != "ns/ConfigMap/missing/k" {
		t.Fatalf("error %v on %q, want ErrNoLimit on ns/ConfigMap/missing/k", err, failed)
	}
	if ok, _, _, _ := m.TryAcquire(&st, Request{Holder: "ns/b", Locks: locks[:1]}); !ok {
		t.Fatal("the refused ask kept a place in the mutex's queue ahead of others")
	}
}

// Lock keys are argo's, and a spec naming the same lock twice or a semaphore without a source is refused.
func TestLockKeysAreArgos(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		sync     wfv1.Synchronization
		want     []string
		wantErr  string
	}{
		{"a legacy mutex and semaphore come first, in argo's order", wfv1.Synchronization{
			Mutex:      &wfv1.Mutex{Name: "m"},
			Semaphore:  &wfv1.SemaphoreRef{ConfigMapKeyRef: &apiv1.ConfigMapKeySelector{LocalObjectReference: apiv1.LocalObjectReference{Name: "cm"}, Key: "k"}},
			Mutexes:    []*wfv1.Mutex{{Name: "other", Namespace: "elsewhere"}},
			Semaphores: []*wfv1.SemaphoreRef{{Database: &wfv1.SyncDatabaseRef{Key: "db"}}},
		}, []string{"ns/ConfigMap/cm/k", "ns/Database/db", "ns/Mutex/m", "elsewhere/Mutex/other"}, ""},
		{"a database mutex is a Database lock", wfv1.Synchronization{Mutexes: []*wfv1.Mutex{{Name: "m", Database: true}}},
			[]string{"ns/Database/m"}, ""},
		{"the same mutex twice is refused", wfv1.Synchronization{Mutex: &wfv1.Mutex{Name: "m"}, Mutexes: []*wfv1.Mutex{{Name: "m"}}},
			nil, "duplicate synchronization item found"},
		{"a semaphore naming no source is refused", wfv1.Synchronization{Semaphores: []*wfv1.SemaphoreRef{{}}},
			nil, "cannot get LockName for a Semaphore without a ConfigMapRef or Database"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			locks, err := Locks(&tc.sync, "ns")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			var keys []string
			for _, l := range locks {
				keys = append(keys, l.Key)
			}
			if err != nil || !slices.Equal(keys, tc.want) {
				t.Fatalf("keys %v (%v), want %v", keys, err, tc.want)
			}
		})
	}
}
