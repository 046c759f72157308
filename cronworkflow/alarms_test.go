package cronworkflow

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestAlarmsFireOnTheInjectedClock(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	fired := make(chan string, 10)
	a := newAlarms(clock, func(key string) { fired <- key })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.run(ctx)
	}()
	defer func() { cancel(); wg.Wait() }()

	a.set("ns/later", t0.Add(2*time.Minute))
	a.set("ns/sooner", t0.Add(time.Minute))
	a.set("ns/cleared", t0.Add(30*time.Second))
	a.set("ns/cleared", time.Time{})
	waitArmed(t, a, t0.Add(time.Minute))
	if len(fired) != 0 {
		t.Fatalf("fired %q before the clock moved", <-fired)
	}
	clock.SetTime(t0.Add(time.Minute))
	if got := <-fired; got != "ns/sooner" {
		t.Fatalf("fired %q first, want ns/sooner", got)
	}
	waitArmed(t, a, t0.Add(2*time.Minute))
	clock.SetTime(t0.Add(5 * time.Minute))
	if got := <-fired; got != "ns/later" {
		t.Fatalf("fired %q, want ns/later", got)
	}
	a.set("ns/past", t0)
	if got := <-fired; got != "ns/past" {
		t.Fatalf("fired %q, want ns/past (a time already passed fires at once)", got)
	}
}

func waitArmed(t *testing.T, a *alarms, at time.Time) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.armedAt().Equal(at), nil
	}); err != nil {
		t.Fatalf("alarm never armed at %s (armed at %s)", at, a.armedAt())
	}
}
