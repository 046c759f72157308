package controlplanetest

import (
	"context"
	"fmt"
	"os"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// TestingM is what goleak.VerifyTestMain runs.
type TestingM interface{ Run() int }

type mainWithControlPlane struct {
	m    TestingM
	opts controlplane.Options
	set  func(*controlplane.ControlPlane)
}

// WithControlPlane wraps a test binary's main so that one control plane serves all its tests:
//
//	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
//
// A failure to start fails the binary with the cause; the control plane is stopped after the tests.
func WithControlPlane(m TestingM, opts controlplane.Options, set func(*controlplane.ControlPlane)) TestingM {
	return mainWithControlPlane{m: m, opts: opts, set: set}
}

func (w mainWithControlPlane) Run() int {
	if w.opts.Logf == nil {
		w.opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	cp, err := controlplane.Start(context.Background(), w.opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting the test control plane: %v\n", err)
		return 1
	}
	w.set(cp)
	code := w.m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the test control plane: %v\n", err)
		return 1
	}
	return code
}
