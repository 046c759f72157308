package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
