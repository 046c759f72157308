package faultinject

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestPointRulesCrashFailDelayAndPause(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	in := NewInjector(mustRules(t, "boom point name=after-workflow-persist : 1*crash->off\n"+
		"flaky point name=before-action-status : 2*error->off\n"+
		"slow point name=before-finalizer-release : 1*delay(5s)->off\n"+
		"hold point name=worker : 1*pause->off for=1m"), 1, clk)
	defer in.Close()
	var crashed []Injection
	in.OnCrash(func(inj Injection) { crashed = append(crashed, inj) })
	p := NewPoints()
	in.ArmPoints(p)
	ctx := t.Context()

	if err := p.Hit(ctx, PointAfterWorkflowPersist); !errors.Is(err, ErrCrash) {
		t.Errorf("crash term: err = %v, want ErrCrash", err)
	}
	if len(crashed) != 1 || crashed[0].Rule != "boom" || crashed[0].Key != "point after-workflow-persist" {
		t.Errorf("OnCrash saw %+v, want the boom rule at after-workflow-persist", crashed)
	}
	if err := p.Hit(ctx, PointAfterWorkflowPersist); err != nil {
		t.Errorf("after 1*crash->off the point passes: %v", err)
	}
	for i := range 2 {
		if err := p.Hit(ctx, PointBeforeActionStatus); err == nil || !strings.Contains(err.Error(), "rule flaky") {
			t.Errorf("error term, hit %d: err = %v, want an injected failure naming the rule", i, err)
		}
	}
	if err := p.Hit(ctx, PointBeforeActionStatus); err != nil {
		t.Errorf("after 2*error->off the point passes: %v", err)
	}

	slow := make(chan error, 1)
	go func() { slow <- p.Hit(ctx, PointBeforeFinalizerRelease) }()
	if err := in.WaitInjected(ctx, "slow", 1); err != nil {
		t.Fatal(err)
	}
	waitForWaiters(t, clk)
	clk.Step(5 * time.Second)
	if err := <-slow; err != nil {
		t.Errorf("a delayed point returned %v", err)
	}

	// A pause holds the worker until its rule ends; replacing the rules (a ConfigMap change or deletion) ends it sooner.
	held := make(chan error, 1)
	go func() { held <- p.Hit(ctx, PointWorker) }()
	if err := in.WaitInjected(ctx, "hold", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-held:
		t.Fatalf("the paused worker passed at once: %v", err)
	default:
	}
	in.SetRules(nil)
	if err := <-held; err != nil {
		t.Errorf("a released pause returned %v", err)
	}
}

func TestAPauseEndsWithItsRule(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	rules, err := ParseRules(strings.NewReader("hold point name=worker : pause for=1m"), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := NewInjector(rules, 1, clk)
	defer in.Close()
	p := NewPoints()
	in.ArmPoints(p)
	held := make(chan error, 1)
	go func() { held <- p.Hit(context.Background(), PointWorker) }()
	if err := in.WaitInjected(t.Context(), "hold", 1); err != nil {
		t.Fatal(err)
	}
	waitForWaiters(t, clk)
	clk.Step(time.Minute)
	if err := <-held; err != nil {
		t.Errorf("the pause did not end cleanly with its rule: %v", err)
	}
	if err := p.Hit(context.Background(), PointWorker); err != nil {
		t.Errorf("after the rule expired the worker passes: %v", err)
	}
}

// waitForWaiters waits until a goroutine waits on the fake clock, so a Step reaches it.
func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	eventually(t, "a goroutine waits on the clock", clk.HasWaiters)
}
