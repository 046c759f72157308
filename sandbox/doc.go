// Package sandbox runs an embedded control plane, the wfguard controller and the simulated node together; a product package behind `wfguard up` and `wfguard demo` (and used by the tests).
package sandbox
