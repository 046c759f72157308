// Package controlplane starts a real etcd + kube-apiserver (+ kube-controller-manager) for integration tests.
package controlplane
