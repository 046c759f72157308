// Package controlplane starts a real etcd + kube-apiserver (+ kube-controller-manager) on local ports; a product package behind `wfguard-sandbox demo`/`wfguard-sandbox up` (and used by the integration tests).
package controlplane
