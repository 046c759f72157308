#!/usr/bin/env bash
# Copies Argo's CRDs exactly as Argo ships them (the "minimal" set of the pinned argo-workflows module).
# Run after bumping argo.
#   config/crd         Workflow, WorkflowTemplate, ClusterWorkflowTemplate, WorkflowTaskResult, CronWorkflow: what
#                      wfguard serves; config/default installs them (with wfguard's own WorkflowAction).
#   config/crd/argo    WorkflowEventBinding, WorkflowArtifactGCTask, WorkflowTaskSet: argo's other three, which
#                      stock argo's workflow-controller (the oracle of issue #16) needs before it syncs. wfguard
#                      does not serve them, so config/default does not install them (an installed CRD nobody
#                      reconciles would accept objects that never take effect).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(go list -m -f '{{.Version}}' github.com/argoproj/argo-workflows/v3)
dir=$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)/manifests/base/crds/minimal
copy() { # target-dir crd...
  local target=$1
  shift
  mkdir -p "$target"
  for crd in "$@"; do
    { echo "# Copied unchanged from github.com/argoproj/argo-workflows/v3@${version} manifests/base/crds/minimal by hack/sync-argo-crds.sh."
      grep -v '^# This is an auto-generated file' "$dir/argoproj.io_${crd}.yaml"; } >"$target/argoproj.io_${crd}.yaml"
  done
}
copy config/crd workflows workflowtemplates clusterworkflowtemplates workflowtaskresults cronworkflows
copy config/crd/argo workfloweventbindings workflowartifactgctasks workflowtasksets
echo "synced argo CRDs from ${version}"
