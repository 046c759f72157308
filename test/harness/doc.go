// Package harness is the one test harness for running wfguard in a test: a controller in process
// (sandbox.StartController, optionally restarted after an injected crash), the simulated node
// (sandbox/simnode), or both (Start), each stopped at the end of the test; and Workflows, a test's handle
// for submitting workflows and waiting on them, their pods, Events and metrics. The control plane they
// talk to is test/controlplanetest's, one per test binary.
package harness
