// Package demo runs the examples on a sandbox and reports phases, outputs and invariants.
package demo
