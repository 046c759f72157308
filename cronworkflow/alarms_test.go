package cronworkflow

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
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

// movingClock is a fake clock that moves by step on every reading, as a real clock does between two
// readings, and by jump when a timer is started (a step taken by another goroutine meanwhile).
type movingClock struct {
	*clocktesting.FakeClock
	step, jump time.Duration
}

func (c *movingClock) Now() time.Time {
	now := c.FakeClock.Now()
	c.Step(c.step)
	return now
}

func (c *movingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *movingClock) NewTimer(d time.Duration) clock.Timer {
	c.Step(c.jump)
	return c.FakeClock.NewTimer(d)
}

// runAlarms runs a's loop until the test ends.
func runAlarms(t *testing.T, a *alarms) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestAlarmsArmOnAClockThatMovesOnEveryReading(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		clock    *movingClock
		at       time.Duration // the key's time after t0
		wantFire bool          // fired with no further step of the clock
	}{
		{sentence: "a clock that moves a microsecond per reading arms the timer once, at the key's time",
			clock: &movingClock{FakeClock: clocktesting.NewFakeClock(t0), step: time.Microsecond}, at: time.Hour},
		{sentence: "a clock that passes the key's time while the timer starts fires the key at once",
			clock: &movingClock{FakeClock: clocktesting.NewFakeClock(t0), jump: 2 * time.Hour}, at: time.Hour, wantFire: true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			fired := make(chan string, 1)
			a := newAlarms(tc.clock, func(key string) { fired <- key })
			runAlarms(t, a)
			a.set("ns/cron", t0.Add(tc.at))
			if tc.wantFire {
				select {
				case got := <-fired:
					if got != "ns/cron" {
						t.Fatalf("fired %q, want ns/cron", got)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the key never fired")
				}
				return
			}
			waitArmed(t, a, t0.Add(tc.at))
			select {
			case got := <-fired:
				t.Fatalf("fired %q before its time", got)
			default:
			}
		})
	}
}

func TestAlarmsFireOnTheRealClock(t *testing.T) {
	fired := make(chan string, 2)
	a := newAlarms(clock.RealClock{}, func(key string) { fired <- key })
	runAlarms(t, a)
	now := time.Now()
	a.set("ns/later", now.Add(40*time.Millisecond))
	a.set("ns/sooner", now.Add(20*time.Millisecond))
	var got []string
	for len(got) < 2 {
		select {
		case key := <-fired:
			got = append(got, key)
		case <-time.After(10 * time.Second):
			t.Fatalf("fired only %v on the real clock within 10s", got)
		}
	}
	if got[0] != "ns/sooner" || got[1] != "ns/later" {
		t.Fatalf("fired %v, want [ns/sooner ns/later]", got)
	}
	if late := time.Since(now); late < 40*time.Millisecond {
		t.Fatalf("both fired %s after setting, before the later one's time", late)
	}
}
