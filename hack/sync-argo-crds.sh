#!/usr/bin/env bash
# Copies the Workflow, WorkflowTemplate, ClusterWorkflowTemplate and WorkflowTaskResult CRDs exactly as Argo
# ships them (the "minimal" set of the pinned argo-workflows module) into config/crd. Run after bumping argo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(go list -m -f '{{.Version}}' github.com/argoproj/argo-workflows/v3)
dir=$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)/manifests/base/crds/minimal
for crd in workflows workflowtemplates clusterworkflowtemplates workflowtaskresults; do
  { echo "# Copied unchanged from github.com/argoproj/argo-workflows/v3@${version} manifests/base/crds/minimal by hack/sync-argo-crds.sh."
    grep -v '^# This is an auto-generated file' "$dir/argoproj.io_${crd}.yaml"; } >"config/crd/argoproj.io_${crd}.yaml"
done
echo "synced argo CRDs from ${version}"
