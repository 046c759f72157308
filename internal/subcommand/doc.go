// Package subcommand runs the command named by a binary's first argument from a table, so that wfguard and
// wfguard-sandbox answer no command, help and an unknown command alike.
package subcommand
