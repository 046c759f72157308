// Module nodeimages writes the real node's container images (issue #18) as local image tarballs, without
// a registry: the sandbox (pause) image, argo's executor image and a busybox image. It is separate so the
// product's go.mod stays clean.
module github.com/wfguard/wfguard/hack/tools/nodeimages

go 1.26.0

require github.com/google/go-containerregistry v0.20.5

require (
	github.com/containerd/stargz-snapshotter/estargz v0.16.3 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/vbatts/tar-split v0.12.1 // indirect
	golang.org/x/sync v0.14.0 // indirect
)
