package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Binary names built by hack/tools/build.sh.
const (
	EtcdBinary                  = "etcd"
	KubeAPIServerBinary         = "kube-apiserver"
	KubeControllerManagerBinary = "kube-controller-manager"
)

// ModuleRoot walks up from dir to the directory holding the product's go.mod.
func ModuleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding the wfguard module root above %s: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/wfguard/wfguard\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("finding the wfguard module root above %s: no go.mod for github.com/wfguard/wfguard", dir)
		}
	}
}

// expectedStamp is what hack/tools/build.sh writes next to each binary: the first 16 hex digits of
// sha256(go.mod + go.sum of hack/tools + the Go version + "\n").
func expectedStamp(root string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, "hack", "tools", f))
		if err != nil {
			return "", fmt.Errorf("reading the tools module to check binary stamps: %w", err)
		}
		h.Write(data)
	}
	h.Write([]byte(runtime.Version() + "\n"))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// checkBinary returns the path of a built control-plane binary, or an error naming the cause and the fix
// when it is missing or was built from another tools module or Go version.
func checkBinary(binDir, root, name string) (string, error) {
	path := filepath.Join(binDir, name)
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("control-plane binary %s is missing: run `make tools` (a cold build takes ~15 min)", path)
	}
	if err != nil {
		return "", fmt.Errorf("checking control-plane binary %s: %w", path, err)
	}
	if info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("control-plane binary %s is not executable: run `make tools`", path)
	}
	want, err := expectedStamp(root)
	if err != nil {
		return "", err
	}
	got, err := os.ReadFile(path + ".stamp")
	if err != nil || strings.TrimSpace(string(got)) != want {
		return "", fmt.Errorf("control-plane binary %s is stale (stamp %q, want %q for hack/tools and %s): run `make tools`",
			path, strings.TrimSpace(string(got)), want, runtime.Version())
	}
	return path, nil
}
