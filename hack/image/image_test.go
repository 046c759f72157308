package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestTheTarballIsANonRootImageOfTheBinaryAlone(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "wfguard")
	content := []byte("\x7fELF not really, but the bytes must come back unchanged")
	if err := os.WriteFile(binary, content, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "wfguard-image.tar")
	var stderr bytes.Buffer
	if code := run([]string{"--binary", binary, "--out", out, "--image", "ghcr.io/wfguard/wfguard:v9.9.9", "--arch", "arm64"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	tag, err := name.NewTag("ghcr.io/wfguard/wfguard:v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("reading the tarball back under its name: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		sentence  string
		got, want string
	}{
		{"it runs as the nonroot user and group", cfg.Config.User, "65532:65532"},
		{"its entrypoint is the binary", strings.Join(cfg.Config.Entrypoint, " "), BinaryPath},
		{"its default command runs the controller", strings.Join(cfg.Config.Cmd, " "), "controller"},
		{"it is a linux image of the binary's architecture", cfg.OS + "/" + cfg.Architecture, "linux/arm64"},
		{"it carries its version", cfg.Config.Labels["org.opencontainers.image.version"], "v9.9.9"},
		{"its creation time is fixed (reproducible)", cfg.Created.UTC().Format(time.RFC3339), "1970-01-01T00:00:00Z"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.sentence, c.got, c.want)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("layers: %d, want 1", len(layers))
	}
	files := layerFiles(t, layers[0])
	bin, ok := files[strings.TrimPrefix(BinaryPath, "/")]
	switch {
	case !ok:
		t.Fatalf("the layer lacks %s; it has %v", BinaryPath, names(files))
	case !bytes.Equal(bin.body, content):
		t.Errorf("the binary in the image differs from the one built")
	case bin.mode != 0o755 || bin.uid != 0:
		t.Errorf("the binary has mode %o owner %d, want 755 owned by root (not writable by the user it runs as)", bin.mode, bin.uid)
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, ok := files[shell]; ok {
			t.Errorf("the image has a shell: /%s", shell)
		}
	}
	if want := []string{"etc/", "etc/group", "etc/passwd", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/wfguard"}; strings.Join(names(files), " ") != strings.Join(want, " ") {
		t.Errorf("the layer has %v, want exactly %v", names(files), want)
	}
}

func TestABadImageNameOrAMissingBinaryIsAClearError(t *testing.T) {
	tests := []struct {
		sentence string
		args     []string
		want     string
	}{
		{"no binary", []string{"--out", "x.tar"}, "--binary is required"},
		{"a binary that is not there", []string{"--binary", "/nonexistent/wfguard", "--out", filepath.Join(t.TempDir(), "x.tar")}, "reading the binary"},
		{"an image name that is no reference", []string{"--binary", "/dev/null", "--image", "Not A Name", "--out", "x.tar"}, `image name "Not A Name"`},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, &stderr); code == 0 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, stderr.String(), tt.want)
			}
		})
	}
}

type file struct {
	body []byte
	mode int64
	uid  int
}

func layerFiles(t *testing.T, l interface {
	Uncompressed() (io.ReadCloser, error)
}) map[string]file {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = file{body: body, mode: h.Mode, uid: h.Uid}
	}
}

func names(files map[string]file) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
