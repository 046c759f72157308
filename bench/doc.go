// Package bench measures the controller against the control plane's own limit and reports the numbers (make bench, cmd/wfguard-bench).
package bench
