package compat

import (
	"testing"
	"time"
)

func TestARunDefaultsOnlyWhatItsOptionsLeaveUnset(t *testing.T) {
	got := RunOptions{}.withDefaults()
	if got.Timeout != 150*time.Second || got.InFlight != 12 || got.Logf == nil {
		t.Errorf("defaults: timeout %s, in flight %d, logf set %t; want 150s, 12, set", got.Timeout, got.InFlight, got.Logf != nil)
	}
	logged := false
	set := RunOptions{Timeout: time.Second, InFlight: 1, Logf: func(string, ...any) { logged = true }}.withDefaults()
	set.Logf("x")
	if set.Timeout != time.Second || set.InFlight != 1 || !logged {
		t.Errorf("set options: timeout %s, in flight %d, own logf %t; want them kept", set.Timeout, set.InFlight, logged)
	}
}
