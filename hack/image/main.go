package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "the static (CGO_ENABLED=0) linux wfguard binary")
	out := fs.String("out", "bin/wfguard-image.tar", "the image tarball to write")
	ref := fs.String("image", "ghcr.io/wfguard/wfguard:latest", "the image name and tag recorded in the tarball")
	arch := fs.String("arch", runtime.GOARCH, "the binary's GOARCH")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *binary == "" {
		fmt.Fprintln(stderr, "image: --binary is required")
		return 2
	}
	if err := write(*binary, *out, *ref, *arch, created()); err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "image: wrote %s (%s)\n", *out, *ref)
	return 0
}

// created is $SOURCE_DATE_EPOCH (the reproducible-builds convention), else the Unix epoch: the image's bytes
// then depend on the binary alone.
func created() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

func write(binary, out, ref, arch string, at time.Time) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	img, err := Build(Spec{Binary: binary, Version: tag.TagStr(), Arch: arch, Created: at})
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
