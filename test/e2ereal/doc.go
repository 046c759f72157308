// Package e2ereal runs workflows with the wfguard controller on a real node (test/realnode: kubelet, containerd, runc and argo's own argoexec v3.7.9); build tag realnode, run by `make e2e-real`.
package e2ereal
