#!/usr/bin/env bash
# Builds tools from the Go module proxy into bin/. A binary is rebuilt only when the stamp next to it
# (bin/<tool>.stamp: a hash of its module's go.mod + go.sum and the Go version) has changed, so a warm run
# costs a few milliseconds.
#
#   hack/tools/build.sh        the test control plane: etcd, kube-apiserver, kube-controller-manager
#                              (module hack/tools; make tools, which make test needs)
#   hack/tools/build.sh argo   stock Argo's workflow-controller, the oracle of issue #16 (module
#                              hack/tools/argo, with argo's own dependency versions; make argo-tools,
#                              cold ~10 min on 2 cores; not part of make tools or make test)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/hack/tools"
bin="$root/bin"
mkdir -p "$bin"

stamp_of() { # module dir
  cat "$1/go.mod" "$1/go.sum" <(go env GOVERSION) | sha256sum | cut -c1-16
}

build() { # module-dir stamp ldflags name package [env...]
  local dir=$1 stamp=$2 ldflags=$3 name=$4 pkg=$5
  shift 5
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "tools: $name is current ($stamp)"
    return
  fi
  echo "tools: building $name from $pkg (cold: several minutes; kube-apiserver ~15 min, workflow-controller ~10 min on 2 cores)"
  local start=$SECONDS
  (cd "$dir" && env "$@" go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/$name.stamp"
  echo "tools: built $name in $((SECONDS - start))s"
}

case "${1:-}" in
"")
  stamp=$(stamp_of "$tools")
  k8s_version=v1.37.2
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
  build "$tools" "$stamp" "$ldflags" etcd go.etcd.io/etcd/server/v3
  build "$tools" "$stamp" "$ldflags" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  build "$tools" "$stamp" "$ldflags" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  ;;
argo)
  # The oracle must be the argo the product is written against: same version in both go.mod files.
  argo_mod=github.com/argoproj/argo-workflows/v3
  want=$(awk -v m="$argo_mod" '$1 == m {print $2}' "$root/go.mod")
  have=$(awk -v m="$argo_mod" '$1 == m {print $2}' "$tools/argo/go.mod")
  if [[ -z "$want" || "$want" != "$have" ]]; then
    echo "tools: $argo_mod is ${want:-missing} in go.mod but ${have:-missing} in hack/tools/argo/go.mod" >&2
    echo "tools: run: cd hack/tools/argo && go get -tool $argo_mod/cmd/workflow-controller@$want && go mod tidy" >&2
    exit 1
  fi
  stamp=$(stamp_of "$tools/argo")
  # Argo's release flags (its Makefile's dist/workflow-controller): static (CGO off), the version stamped so
  # `workflow-controller version` reports v3.x.y+unknown (no git commit) and the default executor image is
  # argoexec:v3.x.y.
  ldflags="-s -w -X $argo_mod.version=$have -X $argo_mod.gitTag=$have -X $argo_mod.gitTreeState=clean -extldflags -static"
  build "$tools/argo" "$stamp" "$ldflags" workflow-controller $argo_mod/cmd/workflow-controller CGO_ENABLED=0
  # argo's own client code (workflow/util: suspend, resume, stop, ...) for the interop tests; the same flags,
  # so it reuses the controller's compiled packages (~1 min warm).
  client_stamp=$(cat <(echo "$stamp") "$tools/argo/argoclient/main.go" | sha256sum | cut -c1-16)
  build "$tools/argo" "$client_stamp" "$ldflags" argo-client ./argoclient CGO_ENABLED=0
  ;;
*)
  echo "usage: $0 [argo]" >&2
  exit 2
  ;;
esac
