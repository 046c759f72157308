#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager) from the Go module proxy
# into bin/. A binary is rebuilt only when the stamp next to it (go.mod + go.sum of this module + the Go
# version) has changed, so a warm run costs a few milliseconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/hack/tools"
bin="$root/bin"
mkdir -p "$bin"

stamp=$(cat "$tools/go.mod" "$tools/go.sum" <(go env GOVERSION) | sha256sum | cut -c1-16)
k8s_version=v1.37.2
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"

build() { # name package
  local name=$1 pkg=$2
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "tools: $name is current ($stamp)"
    return
  fi
  echo "tools: building $name from $pkg (cold: several minutes; kube-apiserver ~15 min on 2 cores)"
  local start=$SECONDS
  (cd "$tools" && go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/$name.stamp"
  echo "tools: built $name in $((SECONDS - start))s"
}

build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
