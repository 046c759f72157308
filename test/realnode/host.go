package realnode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kubeletSysctls are the sysctls the kubelet sets at start; Start saves them and teardown restores them.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

func sysctlPath(name string) string { return filepath.Join("/proc/sys", name) }

// saveSysctls writes "name value" lines of the current values to path.
func saveSysctls(path string) error {
	var b strings.Builder
	for _, name := range kubeletSysctls {
		v, err := os.ReadFile(sysctlPath(name))
		if err != nil {
			return fmt.Errorf("reading sysctl %s to restore it later: %w", name, err)
		}
		fmt.Fprintf(&b, "%s %s\n", name, strings.TrimSpace(string(v)))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("saving sysctls: %w", err)
	}
	return nil
}

// restoreSysctls writes back the values saved in path, reporting those that had changed.
func restoreSysctls(path string, report func(string)) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading saved sysctls: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, want, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(sysctlPath(name), "/proc/sys/") || strings.Contains(name, "..") {
			continue
		}
		have, err := os.ReadFile(sysctlPath(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("reading sysctl %s: %w", name, err))
			continue
		}
		if strings.TrimSpace(string(have)) == want {
			continue
		}
		if err := os.WriteFile(sysctlPath(name), []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s to %s: %w", name, want, err))
			continue
		}
		report(fmt.Sprintf("restored sysctl %s from %s to %s", strings.ReplaceAll(name, "/", "."), strings.TrimSpace(string(have)), want))
	}
	return errors.Join(errs...)
}

// run runs a host command, returning its combined output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// createBridge makes the pod bridge with the pods' gateway address and the `kubernetes` Service address,
// so pods reach the API through the forwarder on this host without any routing or NAT.
func createBridge() error {
	for _, args := range [][]string{
		{"link", "add", "name", BridgeName, "type", "bridge"},
		{"addr", "add", BridgeAddress + "/24", "dev", BridgeName},
		{"addr", "add", ServiceIP + "/32", "dev", BridgeName},
		{"link", "set", BridgeName, "up"},
	} {
		if err := run("ip", args...); err != nil {
			return fmt.Errorf("creating the pod bridge: %w", err)
		}
	}
	return nil
}

func bridgeExists() bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", BridgeName))
	return err == nil
}

func deleteBridge(report func(string)) error {
	if !bridgeExists() {
		return nil
	}
	if err := run("ip", "link", "delete", BridgeName); err != nil {
		return fmt.Errorf("deleting the pod bridge: %w", err)
	}
	report("deleted bridge " + BridgeName)
	return nil
}

// iptablesRules is iptables-save without comments and counters, "" when iptables is not installed.
func iptablesRules() (string, error) {
	if _, err := exec.LookPath("iptables-save"); err != nil {
		return "", nil
	}
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return "", fmt.Errorf("iptables-save: %w", err)
	}
	var kept []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.HasPrefix(line, ":") { // chain line: drop its counters
			line, _, _ = strings.Cut(line, " [")
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n"), nil
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(mountinfo, dir string) []string {
	var found []string
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return strings.Count(found[i], "/") > strings.Count(found[j], "/") })
	return found
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+3 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// unmountAll unmounts everything mounted below dir, deepest first (lazily when busy).
func unmountAll(dir string, report func(string)) error {
	var errs []error
	for round := 0; round < 3; round++ {
		mountinfo, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return fmt.Errorf("reading mountinfo: %w", err)
		}
		mounts := mountsUnder(string(mountinfo), dir)
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, mp := range mounts {
			if err := syscall.Unmount(mp, 0); err != nil {
				if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
					continue
				}
			}
			report("unmounted " + mp)
		}
	}
	return errors.Join(errs...)
}

// cgroupRoots are the places the kubelet's cgroupfs driver creates /kubepods in: every v1 hierarchy
// and a v2 one.
func cgroupRoots() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	roots := []string{"/sys/fs/cgroup"}
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return roots
}

// removeKubepodsCgroups removes the kubelet's /kubepods tree from every hierarchy, first killing any
// process left in it (containers whose shim a sweep killed) and waiting for them to exit.
func removeKubepodsCgroups(report func(string)) error {
	var tops []string
	for _, root := range cgroupRoots() {
		if top := filepath.Join(root, "kubepods"); isDir(top) {
			tops = append(tops, top)
		}
	}
	if len(tops) == 0 {
		return nil
	}
	if err := killCgroupProcs(tops, report); err != nil {
		return err
	}
	var errs []error
	for _, top := range tops {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.SliceStable(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
		report("removed cgroup tree " + top)
	}
	return errors.Join(errs...)
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// cgroupProcs lists the pids in every cgroup below the tops, each once.
func cgroupProcs(tops []string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, top := range tops {
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// killCgroupProcs kills the processes left below tops and waits (up to 10 s) until the cgroups are empty.
func killCgroupProcs(tops []string, report func(string)) error {
	pids := cgroupProcs(tops)
	for _, pid := range pids {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			report(fmt.Sprintf("killed container process %d left in /kubepods", pid))
		}
	}
	if len(pids) == 0 {
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		left := cgroupProcs(tops)
		if len(left) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("processes %v still in /kubepods 10s after SIGKILL", left)
		}
	}
}

// processesMentioning lists the pids whose command line contains needle (a path unique to one node,
// such as its containerd socket): the containerd shims, which leave containerd's process group.
func processesMentioning(needle string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(needle)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
