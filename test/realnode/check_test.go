package realnode

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

const v1Mounts = `25 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
33 30 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`

func fakeHost(uid int, mounts string, missing ...string) Host {
	absent := func(name string) error {
		for _, m := range missing {
			if strings.HasSuffix(name, m) {
				return os.ErrNotExist
			}
		}
		return nil
	}
	return Host{
		Uid: uid, Mounts: mounts,
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, absent(name) },
		Stat:     func(name string) (os.FileInfo, error) { return nil, absent(name) },
	}
}

func TestCheckSaysWhyAHostCannotRunANode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		host      Host
		unfit     bool
		wantError string
	}{
		{"a root host with cgroup v1 and every piece runs a node", fakeHost(0, v1Mounts), false, ""},
		{"a cgroup v2 host runs a node", fakeHost(0, "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw"), false, ""},
		{"a non-root user cannot", fakeHost(1000, v1Mounts), true, "not root (uid 1000)"},
		{"no cgroups at all cannot", fakeHost(0, "25 1 254:0 / / rw - ext4 /dev/vda rw"), true,
			"no cgroup controller cpu, memory, pids mounted"},
		{"systemd's empty unified hierarchy beside v1 does not count", fakeHost(0, strings.Join(strings.Split(v1Mounts, "\n")[:4], "\n")+
			"\n34 30 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw"), true, "no cgroup controller pids mounted"},
		{"missing containerd names the fix", fakeHost(0, v1Mounts, "containerd"), false,
			"containerd is not installed: run hack/tools/build.sh node"},
		{"a missing kubelet names the fix", fakeHost(0, v1Mounts, "/kubelet"), false, "bin/kubelet is missing: run hack/tools/build.sh node"},
		{"a missing CNI plugin names the fix", fakeHost(0, v1Mounts, "/bridge"), false, "CNI plugin bridge is not in /usr/lib/cni"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.host, "/repo/bin")
			var unfit *HostUnfit
			if errors.As(err, &unfit) != tc.unfit {
				t.Errorf("Check = %v, want HostUnfit %v", err, tc.unfit)
			}
			if tc.wantError == "" && err != nil || tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
				t.Errorf("Check = %v, want an error containing %q", err, tc.wantError)
			}
		})
	}
}

func TestMountsUnderAreListedDeepestFirst(t *testing.T) {
	mountinfo := `1 0 0:1 / /tmp/n rw - tmpfs tmpfs rw
2 1 0:2 / /tmp/n/kubelet/pods/a/volumes/x rw - tmpfs tmpfs rw
3 1 0:3 / /tmp/n2 rw - tmpfs tmpfs rw
4 1 0:4 / /tmp/n/with\040space rw - tmpfs tmpfs rw
5 1 0:5 / /other rw - tmpfs tmpfs rw`
	got := mountsUnder(mountinfo, "/tmp/n")
	want := []string{"/tmp/n/kubelet/pods/a/volumes/x", "/tmp/n/with space", "/tmp/n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mountsUnder = %q, want %q", got, want)
	}
}

func TestOwnerPidIsReadFromTheStateDirName(t *testing.T) {
	for dir, want := range map[string]int{
		"/tmp/wfguard-realnode/node-123-456": 123,
		"/tmp/wfguard-realnode/node-x-456":   0,
		"/tmp/wfguard-realnode/other":        0,
		"/tmp/wfguard-realnode/node--1-2":    0,
	} {
		if got := ownerPid(dir); got != want {
			t.Errorf("ownerPid(%s) = %d, want %d", dir, got, want)
		}
	}
}

func TestConfigurationsCarryTheSwitchesThisMachineNeeds(t *testing.T) {
	l := layout{dir: "/tmp/wfguard-realnode/node-1-2"}
	cni, err := cniConfig(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, config, want string }{
		{"containerd keeps its OOM score (no CAP_SYS_RESOURCE)", containerdConfig(l), "restrict_oom_score_adj = true"},
		{"containerd uses cgroupfs", containerdConfig(l), "SystemdCgroup = false"},
		{"containerd's network namespaces live in the state dir", containerdConfig(l), "netns_mounts_under_state_dir = true"},
		{"containerd's socket is the node's own", containerdConfig(l), `address = "/tmp/wfguard-realnode/node-1-2/containerd.sock"`},
		{"the sandbox image is the local pause image", containerdConfig(l), `sandbox_image = "` + PauseImage + `"`},
		{"the kubelet accepts cgroup v1", kubeletConfig(l), "failCgroupV1: false"},
		{"the kubelet keeps OOM scores", kubeletConfig(l), "oomScoreAdj: 0"},
		{"the kubelet never collects the imported images", kubeletConfig(l), "imageGCHighThresholdPercent: 100"},
		{"the kubelet serves on the bridge only", kubeletConfig(l), "address: " + BridgeAddress},
		{"the bridge is no gateway (no forwarding)", string(cni), `"isGateway": false`},
		{"the bridge masquerades nothing", string(cni), `"ipMasq": false`},
		{"pods route only to the Service address", string(cni), `"dst": "10.0.0.1/32"`},
	} {
		if !strings.Contains(tc.config, tc.want) {
			t.Errorf("%s: config lacks %q", tc.what, tc.want)
		}
	}
}
