// Package sandbox runs an embedded control plane, the wfguard controller and the simulated node together.
package sandbox
