package faultinject

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
)

// cp is the real API server the injectors are tested against.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{CRDDir: "-"}, func(c *controlplane.ControlPlane) { cp = c }))
}
