// Command nodeimages writes the real node's images as docker-archive tarballs that `ctr images import`
// loads, so no registry is involved: the sandbox image (pause), argo's executor image (argoexec and a
// static busybox) and a busybox image (busybox-static with its applet links).
//
//	nodeimages -out DIR -pause BIN -argoexec BIN -busybox BIN -argoexec-ref REF -busybox-ref REF -pause-ref REF
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch stamps every file and image, so the same inputs give the same image digests.
var epoch = time.Unix(0, 0).UTC()

func main() {
	out := flag.String("out", "", "directory for pause.tar, argoexec.tar and busybox.tar")
	pause := flag.String("pause", "", "the static pause binary")
	argoexec := flag.String("argoexec", "", "the static argoexec binary")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox binary")
	pauseRef := flag.String("pause-ref", "", "the pause image's name")
	argoexecRef := flag.String("argoexec-ref", "", "the executor image's name")
	busyboxRef := flag.String("busybox-ref", "", "the busybox image's name")
	flag.Parse()
	if err := run(*out, *pause, *argoexec, *busybox, *pauseRef, *argoexecRef, *busyboxRef); err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages:", err)
		os.Exit(1)
	}
}

func run(out, pause, argoexec, busybox, pauseRef, argoexecRef, busyboxRef string) error {
	for flagName, v := range map[string]string{"-out": out, "-pause": pause, "-argoexec": argoexec,
		"-pause-ref": pauseRef, "-argoexec-ref": argoexecRef, "-busybox-ref": busyboxRef} {
		if v == "" {
			return fmt.Errorf("%s is required", flagName)
		}
	}
	applets, err := busyboxApplets(busybox)
	if err != nil {
		return err
	}
	images := []struct {
		file, ref string
		files     []file
		cmd       []string
	}{
		{"pause.tar", pauseRef, []file{{path: "pause", source: pause, mode: 0o755}}, []string{"/pause"}},
		{"busybox.tar", busyboxRef, busyboxFiles(busybox, applets), []string{"sh"}},
		{"argoexec.tar", argoexecRef, append(busyboxFiles(busybox, applets),
			file{path: "usr/local/bin/argoexec", source: argoexec, mode: 0o755}), []string{"argoexec"}},
	}
	for _, im := range images {
		if err := writeImage(filepath.Join(out, im.file), im.ref, im.files, im.cmd); err != nil {
			return fmt.Errorf("writing %s (%s): %w", im.file, im.ref, err)
		}
	}
	return nil
}

// file is one entry of an image's only layer: a regular file copied from source, a directory, or a
// symlink to target.
type file struct {
	path, source, target string
	mode                 int64
	dir                  bool
}

func busyboxApplets(busybox string) ([]string, error) {
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the applets of %s: %w", busybox, err)
	}
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	return applets, nil
}

// busyboxFiles is a root file system of busybox: /bin/busybox, a link in /bin for each applet, /tmp.
func busyboxFiles(busybox string, applets []string) []file {
	files := []file{
		{path: "bin", dir: true, mode: 0o755},
		{path: "tmp", dir: true, mode: 0o1777},
		{path: "bin/busybox", source: busybox, mode: 0o755},
	}
	for _, a := range applets {
		if a != "busybox" {
			files = append(files, file{path: "bin/" + a, target: "busybox"})
		}
	}
	return files
}

func writeImage(path, ref string, files []file, cmd []string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("parsing the image name: %w", err)
	}
	layerTar, err := layerOf(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("making the layer: %w", err)
	}
	diffID, err := layer.DiffID()
	if err != nil {
		return fmt.Errorf("hashing the layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("adding the layer: %w", err)
	}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: "amd64", OS: "linux", Created: v1.Time{Time: epoch},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
		Config: v1.Config{Cmd: cmd, Env: []string{"PATH=" + defaultPath}},
	})
	if err != nil {
		return fmt.Errorf("setting the image config: %w", err)
	}
	return tarball.WriteToFile(path, tag, img)
}

func layerOf(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.path, Mode: f.mode, ModTime: epoch, Format: tar.FormatPAX}
		var data []byte
		switch {
		case f.dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.path+"/"
		case f.target != "":
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.target, 0o777
		default:
			var err error
			if data, err = os.ReadFile(f.source); err != nil {
				return nil, fmt.Errorf("reading %s for /%s: %w", f.source, f.path, err)
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing /%s: %w", f.path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("writing /%s: %w", f.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}
