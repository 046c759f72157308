// Package simnode plays kubelet and argoexec for workflow pods on a real API server, with programmable faults.
package simnode
