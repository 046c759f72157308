// Package cmdlog builds the logger of the --log-format and --log-level flags, shared by the controller
// binary (cmd/wfguard) and the playground's (cmd/wfguard-sandbox), so both read those flags alike.
package cmdlog
