// Package chaos runs workflows under seeded random faults and checks DESIGN.md's invariants on every state.
package chaos
