package realnode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HostUnfit says why this machine cannot run a node at all (a test skips with it); a missing build
// product is not HostUnfit but a plain error naming the fix.
type HostUnfit struct{ Reasons []string }

func (e *HostUnfit) Error() string {
	return "this host cannot run a real node: " + strings.Join(e.Reasons, "; ")
}

// Host is what the precondition check reads from the machine; tests give their own.
type Host struct {
	Uid      int
	Mounts   string // /proc/self/mountinfo
	LookPath func(string) (string, error)
	Stat     func(string) (os.FileInfo, error)
}

// ThisHost reads the running machine.
func ThisHost() Host {
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	return Host{Uid: os.Getuid(), Mounts: string(mounts), LookPath: exec.LookPath, Stat: os.Stat}
}

// cgroupControllers the kubelet needs, in v1 hierarchies or in a v2 unified one.
var cgroupControllers = []string{"cpu", "memory", "pids"}

// hostPrograms come from apt (containerd runc containernetworking-plugins busybox-static).
var hostPrograms = []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "ip", "mount"}

var cniPlugins = []string{"bridge", "host-local", "loopback"}

// CNIDir is where Debian's containernetworking-plugins puts the plugins.
const CNIDir = "/usr/lib/cni"

// Check says whether h can run a node: *HostUnfit for what no build fixes (no root, no cgroups), a plain
// error for a missing package or binary, with the command that installs or builds it.
func Check(h Host, binDir string) error {
	var unfit []string
	if h.Uid != 0 {
		unfit = append(unfit, fmt.Sprintf("not root (uid %d): a kubelet and containerd need root", h.Uid))
	}
	if missing := missingCgroupControllers(h.Mounts); len(missing) > 0 {
		unfit = append(unfit, fmt.Sprintf("no cgroup controller %s mounted (neither a v1 hierarchy nor cgroup2)",
			strings.Join(missing, ", ")))
	}
	if len(unfit) > 0 {
		return &HostUnfit{Reasons: unfit}
	}
	var errs []error
	for _, p := range hostPrograms {
		if _, err := h.LookPath(p); err != nil {
			errs = append(errs, fmt.Errorf("%s is not installed: run hack/tools/build.sh node (apt: containerd runc containernetworking-plugins busybox-static)", p))
		}
	}
	for _, p := range cniPlugins {
		if _, err := h.Stat(filepath.Join(CNIDir, p)); err != nil {
			errs = append(errs, fmt.Errorf("CNI plugin %s is not in %s: run hack/tools/build.sh node (apt: containernetworking-plugins)", p, CNIDir))
		}
	}
	for _, b := range []string{"kubelet", "argoexec", "node-images/pause.tar", "node-images/argoexec.tar", "node-images/busybox.tar"} {
		if _, err := h.Stat(filepath.Join(binDir, b)); err != nil {
			errs = append(errs, fmt.Errorf("%s is missing: run hack/tools/build.sh node", filepath.Join(binDir, b)))
		}
	}
	return errors.Join(errs...)
}

// missingCgroupControllers lists the needed controllers that no cgroup mount in mountinfo provides.
func missingCgroupControllers(mountinfo string) []string {
	have := map[string]bool{}
	for _, line := range strings.Split(mountinfo, "\n") {
		// mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			if fields[4] != "/sys/fs/cgroup" {
				continue // a v2 hierarchy beside v1 ones (systemd's "unified") has no controllers
			}
			for _, c := range cgroupControllers {
				have[c] = true // the kubelet checks which are enabled itself
			}
		case "cgroup":
			for _, opt := range strings.Split(tail[2], ",") {
				have[opt] = true
			}
		}
	}
	var missing []string
	for _, c := range cgroupControllers {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	return missing
}
