// Package controlplane starts a real etcd + kube-apiserver (+ kube-controller-manager) on local ports; a product package behind `wfguard demo`/`wfguard up` (and used by the integration tests).
package controlplane
