// Package interop runs argo's own CLI (bin/argo, argo v3.7.9's cmd/argo) through one scenario per feature
// against stock argo's workflow-controller and against wfguard, on one embedded control plane with the
// simulated node, both in kubernetes mode (kubeconfig) and through argo-server's API, and compares what the
// CLI printed, its exit codes and the workflows as `argo get -o json` shows them, normalized.
package interop
