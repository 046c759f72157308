// Package compat runs stock Argo's workflow-controller (bin/workflow-controller, built by `make argo-tools`)
// out of process against an embedded control plane: the oracle that issue #16's differential suite compares
// wfguard with. Its tests carry the build tag compat and run with `make compat`, so `make test` needs no
// argo binary.
package compat
