package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fixed addresses and names of the node. The test control plane's Service range is 10.0.0.0/24 (the
// `kubernetes` Service is 10.0.0.1:443), so one node runs on a machine at a time.
const (
	NodeName      = "wfguard-realnode"
	BridgeName    = "wfg0"
	PodSubnet     = "10.88.0.0/24"
	BridgeAddress = "10.88.0.1"
	ServiceIP     = "10.0.0.1"
	ServicePort   = 443
	KubeletPort   = 10250
	// PauseImage, ExecutorImage and BusyboxImage are the images hack/tools/build.sh node writes.
	PauseImage   = "registry.k8s.io/pause:3.10"
	BusyboxImage = "docker.io/library/busybox:1.35"
)

// APIServerArgs are the control plane's kube-apiserver flags the node needs: reach the kubelet (logs) at
// its InternalIP, never through a DNS lookup of the node's name.
var APIServerArgs = []string{"--kubelet-preferred-address-types=InternalIP"}

// ExecutorImage is argo's executor image for an argo version, as hack/tools/build.sh node names it.
func ExecutorImage(argoVersion string) string { return "quay.io/argoproj/argoexec:" + argoVersion }

// stateRoot holds one directory per node, named node-<pid>-<random>, so a later Start can find and tear
// down what a killed test binary left.
func stateRoot() string { return filepath.Join(os.TempDir(), "wfguard-realnode") }

// layout names every path of one node under its state dir.
type layout struct{ dir string }

func (l layout) containerdRoot() string   { return filepath.Join(l.dir, "containerd", "root") }
func (l layout) containerdState() string  { return filepath.Join(l.dir, "containerd", "state") }
func (l layout) containerdSocket() string { return filepath.Join(l.dir, "containerd.sock") }
func (l layout) containerdConfig() string { return filepath.Join(l.dir, "containerd.toml") }
func (l layout) runcRoot() string         { return filepath.Join(l.dir, "runc") }
func (l layout) cniConfDir() string       { return filepath.Join(l.dir, "cni", "net.d") }
func (l layout) cniIPAMDir() string       { return filepath.Join(l.dir, "cni", "ipam") }
func (l layout) kubeletRoot() string      { return filepath.Join(l.dir, "kubelet") }
func (l layout) kubeletConfig() string    { return filepath.Join(l.dir, "kubelet.yaml") }
func (l layout) podLogs() string          { return filepath.Join(l.dir, "pod-logs") }
func (l layout) sysctlsSaved() string     { return filepath.Join(l.dir, "sysctls") }
func (l layout) iptablesSaved() string    { return filepath.Join(l.dir, "iptables-save") }
func (l layout) createdHostDirs() string  { return filepath.Join(l.dir, "created-host-dirs") }
func (l layout) log(name string) string   { return filepath.Join(l.dir, name+".log") }

// ownerPid is the pid in a state dir's name node-<pid>-<random>; 0 when the name is not one.
func ownerPid(dir string) int {
	parts := strings.SplitN(filepath.Base(dir), "-", 3)
	if len(parts) != 3 || parts[0] != "node" {
		return 0
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return nil
}
