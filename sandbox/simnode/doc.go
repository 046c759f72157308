// Package simnode plays kubelet and argoexec for workflow pods on a real API server, with programmable faults; a product package behind `wfguard-sandbox demo`/`wfguard-sandbox up` (and used by the tests).
package simnode
