// Package sandbox runs an embedded control plane, the wfguard controller and the simulated node together; a product package behind `wfguard-sandbox up` and `wfguard-sandbox demo` (and used by the tests).
package sandbox
