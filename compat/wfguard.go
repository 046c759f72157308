package compat

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// BuildWFGuard builds cmd/wfguard of the module at root into dir and returns the binary's path.
func BuildWFGuard(root, dir string) (string, error) {
	bin := filepath.Join(dir, "wfguard")
	build := exec.Command("go", "build", "-o", bin, "./cmd/wfguard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building wfguard: %w\n%s", err, out)
	}
	return bin, nil
}

// WFGuardOptions configure StartWFGuard: the settings it shares with StartOracle's argo, so both controllers
// run alike.
type WFGuardOptions struct {
	// Binary is a wfguard binary (BuildWFGuard).
	Binary string
	// Kubeconfig is the admin kubeconfig of the control plane.
	Kubeconfig string
	// Namespace is the one namespace the controller manages (--namespaced --managed-namespace).
	Namespace string
	// ExecutorImage is --executor-image; required (argo's: quay.io/argoproj/argoexec:<ArgoVersion>).
	ExecutorImage string
	// Workers, QPS and Burst are --workflow-workers, --qps and --burst. Defaults: Workers, QPS, Burst.
	Workers, QPS, Burst int
	// Args are more flags, e.g. --instanceid.
	Args []string
	// LogPath receives the controller's output; required.
	LogPath string
}

// StartWFGuard starts `wfguard controller` out of process against the control plane, without leader
// election, as StartOracle starts argo's controller. It returns once the process runs.
func StartWFGuard(opts WFGuardOptions) (*controlplane.Process, error) {
	if opts.Binary == "" || opts.Kubeconfig == "" || opts.Namespace == "" || opts.ExecutorImage == "" || opts.LogPath == "" {
		return nil, errors.New("starting wfguard: Binary, Kubeconfig, Namespace, ExecutorImage and LogPath are required")
	}
	if opts.Workers == 0 {
		opts.Workers = Workers
	}
	if opts.QPS == 0 {
		opts.QPS = QPS
	}
	if opts.Burst == 0 {
		opts.Burst = Burst
	}
	args := append([]string{
		"controller", "--kubeconfig=" + opts.Kubeconfig, "--namespaced", "--managed-namespace=" + opts.Namespace,
		"--executor-image=" + opts.ExecutorImage, "--workflow-workers=" + strconv.Itoa(opts.Workers),
		"--qps=" + strconv.Itoa(opts.QPS), "--burst=" + strconv.Itoa(opts.Burst),
		"--metrics-port=0", "--health-port=0", "--log-format=text",
	}, opts.Args...)
	return controlplane.StartProcess("wfguard controller", opts.Binary, opts.LogPath, args,
		[]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LEADER_ELECTION_DISABLE=true", "NAMESPACE=" + opts.Namespace})
}

// ExecutorImage is the executor image both controllers are given: argo's argoexec of the version go.mod
// requires (the simulated node runs no image; the pods only name it).
func ExecutorImage(root string) (string, error) {
	version, err := ArgoVersion(root)
	if err != nil {
		return "", err
	}
	return "quay.io/argoproj/argoexec:" + version, nil
}
