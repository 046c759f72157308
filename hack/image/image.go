package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image's fixed facts.
const (
	// BinaryPath is where the binary lives in the image, and the entrypoint.
	BinaryPath = "/usr/local/bin/wfguard"
	// NonRoot is the user and group the image runs as (distroless' "nonroot").
	NonRoot = "65532"
)

// Spec is what one build needs.
type Spec struct {
	// Binary is the static wfguard binary to put in the image.
	Binary string
	// Version labels the image (org.opencontainers.image.version).
	Version string
	// Arch is the binary's GOARCH; the image is linux/Arch.
	Arch string
	// Created is the image's creation time; a fixed one (e.g. the commit's) keeps builds reproducible.
	Created time.Time
}

// Build assembles the image: one layer over an empty base.
func Build(s Spec) (v1.Image, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	layerTar, err := layerContents(bin, s.Created)
	if err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	// The tarball format (docker save's, which docker load, ctr images import and kind load read) records no
	// media types, so none are set here.
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer,
		History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "hack/image: wfguard binary", Comment: "wfguard " + s.Version}})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = s.Arch, "linux", v1.Time{Time: s.Created}
	cfg.Config = v1.Config{
		User:       NonRoot + ":" + NonRoot,
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"controller"},
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "wfguard",
			"org.opencontainers.image.description": "A drop-in replacement for Argo Workflows' workflow-controller",
			"org.opencontainers.image.version":     s.Version,
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// layerContents is the layer's tar: the binary (root-owned, not writable by the user it runs as), the
// nonroot user's passwd and group entries, and a world-writable /tmp.
func layerContents(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		body []byte
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: BinaryPath[1:], mode: 0o755, body: bin},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Typeflag: tar.TypeReg, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
