package realnode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// containerdConfig is containerd 1.6's configuration for one node: every path under the state dir, runc
// with cgroupfs, no OOM score changes (root here lacks CAP_SYS_RESOURCE), CNI from Debian's plugins.
func containerdConfig(l layout) string {
	return strings.NewReplacer(
		"ROOT", l.containerdRoot(), "STATE", l.containerdState(), "SOCKET", l.containerdSocket(),
		"RUNCROOT", l.runcRoot(), "CNICONF", l.cniConfDir(), "CNIBIN", CNIDir, "PAUSE", PauseImage,
	).Replace(`version = 2
root = "ROOT"
state = "STATE"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "SOCKET"

[ttrpc]
  address = "SOCKET.ttrpc"

[debug]
  level = "warn"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "ROOT/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "PAUSE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "RUNCROOT"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "CNIBIN"
    conf_dir = "CNICONF"
    max_conf_num = 1
`)
}

// cniConfig is the pod network: Debian's bridge plugin on BridgeName with host-local addresses, not a
// gateway and no masquerade (so it adds no iptables rule and no forwarding), and one route: to the
// `kubernetes` Service address, which lives on the bridge itself.
func cniConfig(l layout) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "wfguard",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": BridgeName, "isGateway": false, "ipMasq": false, "hairpinMode": false,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": PodSubnet, "gateway": BridgeAddress}}},
				"routes":  []map[string]string{{"dst": ServiceIP + "/32"}},
				"dataDir": l.cniIPAMDir(),
			},
		}},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the CNI configuration: %w", err)
	}
	return data, nil
}

// kubeletConfig is the KubeletConfiguration: cgroup v1 accepted, cgroupfs, no OOM score changes, the
// read-write API on the bridge address only, the node's IP (the apiserver reaches it anonymously for logs;
// the kubelet refuses a loopback node IP), no image GC (images
// come from tarballs, never from a registry), no eviction of test pods.
func kubeletConfig(l layout) string {
	return strings.NewReplacer("SOCKET", l.containerdSocket(), "PODLOGS", l.podLogs(), "ADDRESS", BridgeAddress,
		"PORT", fmt.Sprint(KubeletPort)).Replace(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ADDRESS
port: PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://SOCKET
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
podLogsDir: PODLOGS
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
serializeImagePulls: false
registerNode: true
makeIPTablesUtilChains: false
protectKernelDefaults: false
enableServer: true
syncFrequency: 10s
fileCheckFrequency: 1h
`)
}

func writeConfigs(l layout) error {
	cni, err := cniConfig(l)
	if err != nil {
		return err
	}
	for path, data := range map[string][]byte{
		l.containerdConfig(): []byte(containerdConfig(l)),
		filepath.Join(l.cniConfDir(), "10-wfguard.conflist"): cni,
		l.kubeletConfig(): []byte(kubeletConfig(l)),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
