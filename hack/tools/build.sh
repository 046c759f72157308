#!/usr/bin/env bash
# Builds tools from the Go module proxy into bin/. A binary is rebuilt only when the stamp next to it
# (bin/<tool>.stamp: a hash of its module's go.mod + go.sum and the Go version) has changed, so a warm run
# costs a few milliseconds.
#
#   hack/tools/build.sh        the test control plane: etcd, kube-apiserver, kube-controller-manager
#                              (module hack/tools; make tools, which make test needs)
#   hack/tools/build.sh argo   stock Argo's workflow-controller, the oracle of issue #16 (module
#                              hack/tools/argo, with argo's own dependency versions; make argo-tools,
#                              cold ~10 min on 2 cores), argo-client, and argo's CLI bin/argo (also
#                              `argo server`) for make interop (module hack/tools/argocli)
#   hack/tools/build.sh node   the real node of issue #18 (make e2e-real): apt's containerd, runc, CNI
#                              plugins and busybox-static; kubelet (the control plane's
#                              flags; module hack/tools/node); argoexec (module hack/tools/argoexec); the images as local tarballs
#                              (module hack/tools/nodeimages); cold ~12 min on 2 cores
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

k8s_version=v1.37.2
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"

argo_mod=github.com/argoproj/argo-workflows/v3
argo_version() { # go.mod
  awk -v m="$argo_mod" '$1 == m {print $2; exit}' "$1"
}
argo_ldflags() { # version
  echo "-s -w -X $argo_mod.version=$1 -X $argo_mod.gitTag=$1 -X $argo_mod.gitTreeState=clean -extldflags -static"
}

# restore_argo_module copies argo's module (read-only in the module cache) to <module-dir>/argo-workflows, for a
# module that replaces argo with that copy, and restores there what argo's module zip lacks: the symlink
# workflow/executor/osspecific/signal_linux.go -> signal_darwin.go (as a copy, so that argoexec builds on
# linux) and ui/dist/app, the UI argo builds with yarn (an empty index.html, as argo's Makefile touches one
# without STATIC_FILES, so that argo's CLI, whose server embeds it, builds).
restore_argo_module() { # module-dir
  local version src dir=$1 dst=$1/argo-workflows
  version=$(argo_version "$root/go.mod")
  if [[ "$(argo_version "$dir/go.mod")" != "$version" ]]; then
    echo "tools: $argo_mod is $version in go.mod but $(argo_version "$dir/go.mod") in ${dir#"$root"/}/go.mod" >&2
    exit 1
  fi
  if [[ -f "$dst/.version" && "$(cat "$dst/.version")" == "$version" ]]; then
    return
  fi
  src=$(cd "$tools/argo" && go mod download -json "$argo_mod@$version" | awk -F'"' '$2 == "Dir" {print $4}')
  rm -rf "$dst"
  cp -r "$src" "$dst"
  chmod -R u+w "$dst"
  cp "$dst/workflow/executor/osspecific/signal_darwin.go" "$dst/workflow/executor/osspecific/signal_linux.go"
  mkdir -p "$dst/ui/dist/app"
  : >"$dst/ui/dist/app/index.html"
  echo "$version" >"$dst/.version"
  echo "tools: copied $argo_mod@$version to $dst with signal_linux.go and an empty ui/dist/app/index.html"
}
# The node's packages from Debian: only their binaries are used (no service is enabled or started).
install_node_packages() {
  local missing=()
  for p in containerd runc containernetworking-plugins busybox-static; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})) && ((EUID != 0)); then
    echo "tools: not root, so not installing ${missing[*]}: make e2e-real will skip (a node needs root)"
  elif ((${#missing[@]})); then
    echo "tools: installing ${missing[*]} from apt"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
# Image names the node's pods use (test/realnode knows them too).
node_pause_ref=registry.k8s.io/pause:3.10
node_busybox_ref=docker.io/library/busybox:1.35
argo_ldflags=$(argo_ldflags "$(argo_version "$root/go.mod")")

case "${1:-}" in
"")
  stamp=$(stamp_of "$tools")
  build "$tools" "$stamp" "$k8s_ldflags" etcd go.etcd.io/etcd/server/v3
  build "$tools" "$stamp" "$k8s_ldflags" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  build "$tools" "$stamp" "$k8s_ldflags" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
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
  # argo's own CLI (cmd/argo, which also runs `argo server`) for make interop: module hack/tools/argocli, the
  # same dependency versions, argo replaced by a copy holding the empty UI (restore_argo_module).
  restore_argo_module "$tools/argocli"
  build "$tools/argocli" "$(stamp_of "$tools/argocli")" "$ldflags" argo $argo_mod/cmd/argo CGO_ENABLED=0
  ;;
node)
  install_node_packages
  # kubelet: module hack/tools/node, the control plane's k8s.io/kubernetes, versions, flags and replace block.
  build "$tools/node" "$(stamp_of "$tools/node")" "$k8s_ldflags" kubelet k8s.io/kubernetes/cmd/kubelet
  restore_argo_module "$tools/argoexec"
  build "$tools/argoexec" "$(stamp_of "$tools/argoexec")" "$argo_ldflags" argoexec \
    github.com/argoproj/argo-workflows/v3/cmd/argoexec CGO_ENABLED=0
  images=$tools/nodeimages
  images_stamp=$(cat <(stamp_of "$images") "$images"/*.go "$images"/pause/*.go "$bin/argoexec.stamp" /bin/busybox |
    sha256sum | cut -c1-16)
  build "$images" "$images_stamp" "-s -w" node-pause ./pause CGO_ENABLED=0
  build "$images" "$images_stamp" "-s -w" nodeimages . CGO_ENABLED=0
  if [[ "$(cat "$bin/node-images/stamp" 2>/dev/null)" != "$images_stamp" ]]; then
    rm -rf "$bin/node-images"
    mkdir -p "$bin/node-images"
    "$bin/nodeimages" -out "$bin/node-images" -pause "$bin/node-pause" -argoexec "$bin/argoexec" -busybox /bin/busybox \
      -pause-ref "$node_pause_ref" -argoexec-ref "quay.io/argoproj/argoexec:$(argo_version "$root/go.mod")" \
      -busybox-ref "$node_busybox_ref"
    echo "$images_stamp" >"$bin/node-images/stamp"
    echo "tools: wrote the node's images to $bin/node-images"
  else
    echo "tools: node images are current ($images_stamp)"
  fi
  ;;
*)
  echo "usage: $0 [argo|node]" >&2
  exit 2
  ;;
esac
