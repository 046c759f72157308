// Package controlplanetest is the test-only harness around sandbox/controlplane: one control plane per test binary, and waiting for RBAC to take effect.
package controlplanetest
