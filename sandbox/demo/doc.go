// Package demo runs the examples on a sandbox and reports phases, outputs and invariants; a product package behind `wfguard-sandbox demo` (and used by its test).
package demo
