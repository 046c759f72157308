package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/controller/promptqueue"
)

func TestAKeyHandedOutRunsAPassOnlyForAChangeOrTheTimeAPassAskedFor(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	fake := testingclock.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	q := promptqueue.New(promptqueue.Config{Name: "admit-test", Clock: fake, RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string]()})
	defer q.ShutDown()
	c := &Controller{clock: fake, queue: q, metrics: m}
	const key = "ns/wf"
	skipped := func() float64 { return testutil.ToFloat64(m.passesSkipped) }

	if !c.admit(key) {
		t.Fatal("a key never recorded should run a pass: nothing is known about what it missed")
	}
	c.demand.Changed(key)
	if !c.admit(key) {
		t.Fatal("a change seen since the last pass began should run a pass")
	}
	if c.admit(key) || skipped() != 1 {
		t.Fatalf("a delayed entry whose change a pass already saw should run none and be counted (skipped %v)", skipped())
	}
	if q.Len() != 0 {
		t.Fatalf("nothing asked for %s again, yet it was queued", key)
	}

	// The pass that ran asked to run again in 5 s; an earlier delayed entry took the queue's one slot.
	c.demand.Requested(key, t0.Add(5*time.Second))
	fake.Step(time.Second)
	if c.admit(key) || skipped() != 2 {
		t.Fatalf("an entry 4 s before the asked time should run no pass (skipped %v)", skipped())
	}
	fake.Step(4 * time.Second)
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() == 1, nil
	}); err != nil {
		t.Fatalf("the key was not queued again for the rest of the asked time: %v", err)
	}
	got, _ := q.Get()
	defer q.Done(got)
	if got != key || !c.admit(key) {
		t.Fatalf("handed out %q at the asked time: it should run a pass", got)
	}

	c.demand.Requested(key, fake.Now()) // a retry after an error
	if !c.admit(key) {
		t.Fatal("a retry should always run a pass")
	}
}

func TestUpdatesThatArriveWhileOurWriteIsOnTheWireWaitForItsAnswer(t *testing.T) {
	const key = "ns/wf"
	const uid = types.UID("u")
	update := func(rv string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: uid, ResourceVersion: rv}
	}
	for _, tc := range []struct {
		sentence   string
		window     time.Duration
		waiting    bool     // a pass skipped a stale copy and waits for our echo
		arrive     []string // update events while the write is on the wire
		stored     string   // what the write stored; "" if it failed
		wantHeld   bool
		wantAtOnce bool // queued at once rather than for a late look
	}{
		{"our write's echo that beat the answer is looked at one window later", time.Second, false, []string{"5"}, "5", true, false},
		{"someone else's update meanwhile is queued at once", time.Second, false, []string{"4"}, "5", true, true},
		{"our echo and another update: at once", time.Second, false, []string{"5", "6"}, "5", true, true},
		{"a failed write queues what arrived at once", time.Second, false, []string{"5"}, "", true, true},
		{"a pass waiting for our echo runs at once", time.Second, true, []string{"5"}, "5", true, true},
		{"with coalescing off nothing is held", 0, false, []string{"5"}, "5", false, true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			fake := testingclock.NewFakeClock(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
			q := promptqueue.New(promptqueue.Config{Name: "hold-test", Clock: fake, RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string]()})
			defer q.ShutDown()
			c := &Controller{opts: Options{StatusCoalesceWindow: tc.window}, clock: fake, queue: q, staleWaiters: map[string]struct{}{}}
			if tc.waiting {
				c.awaitEcho(key)
			}
			if c.heldForWrite(update("3")) {
				t.Fatal("an update with no write on the wire was held")
			}
			c.holdUpdates(uid)
			for _, rv := range tc.arrive {
				if held := c.heldForWrite(update(rv)); held != tc.wantHeld {
					t.Fatalf("update %s held = %v, want %v", rv, held, tc.wantHeld)
				}
			}
			c.releaseUpdates(key, uid, tc.stored)
			if !tc.wantHeld {
				if q.Len() != 0 {
					t.Fatal("the write's answer queued updates that were never held (the handler queued them itself)")
				}
				return
			}
			if got := q.Len() == 1; got != tc.wantAtOnce {
				t.Fatalf("queued at once = %v, want %v", got, tc.wantAtOnce)
			}
			if !tc.wantAtOnce {
				fake.Step(tc.window)
				if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					return q.Len() == 1, nil
				}); err != nil {
					t.Fatalf("the late look never came: %v", err)
				}
			}
			if _, waits := c.staleWaiters[key]; waits && tc.waiting {
				t.Error("the pass waiting for our echo still waits after it arrived")
			}
			if c.heldForWrite(update("9")) {
				t.Error("updates are still held after the write's answer")
			}
		})
	}
}
