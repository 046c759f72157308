package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicksPerSecond = 100

// cpuSeconds is the user + system CPU time a process has used, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	return parseCPUSeconds(string(data))
}

// parseCPUSeconds reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line. The command name
// (field 2) is in parentheses and may hold spaces and parentheses, so fields are counted after its last ')'.
func parseCPUSeconds(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("parsing /proc stat %q: no command name", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing utime %q: %w", fields[11], err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing stime %q: %w", fields[12], err)
	}
	return float64(utime+stime) / clockTicksPerSecond, nil
}

// machineBusySeconds is the CPU time every process on the machine has used so far, on all cores, from
// /proc/stat: what a run's measured processes did not use of it was the machine's other work.
func machineBusySeconds() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("reading the machine's CPU time: %w", err)
	}
	return parseBusySeconds(string(data))
}

// parseBusySeconds reads the "cpu" line of /proc/stat: user, nice, system, irq, softirq and steal, the
// fields but idle and iowait (guest time is already in user and nice).
func parseBusySeconds(stat string) (float64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("parsing /proc/stat: the first line %q is not the cpu line with at least 8 fields", line)
	}
	var busy uint64
	for i, name := range []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"} {
		ticks, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s in /proc/stat %q: %w", name, fields[i+1], err)
		}
		if name != "idle" && name != "iowait" {
			busy += ticks
		}
	}
	return float64(busy) / clockTicksPerSecond, nil
}

// rssBytes is a process's resident set size, from VmRSS in /proc/<pid>/status.
func rssBytes(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the RSS of process %d: %w", pid, err)
	}
	return parseRSSBytes(string(data))
}

// parseRSSBytes reads the "VmRSS:  1234 kB" line of a /proc/<pid>/status.
func parseRSSBytes(status string) (float64, error) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "VmRSS" {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("parsing VmRSS %q: want \"<n> kB\"", strings.TrimSpace(v))
		}
		kib, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing VmRSS %q: %w", f[0], err)
		}
		return float64(kib) * 1024, nil
	}
	return 0, fmt.Errorf("parsing /proc status: no VmRSS line")
}

// benchProcess names the bench's own process in a run's machine CPU: the simulated node, the observers,
// the proxies and, in their runs, the raw clients all run in it.
const benchProcess = "bench process"

// cpuByProcess reads the CPU time so far of each named process.
func cpuByProcess(pids map[string]int) (map[string]float64, error) {
	out := make(map[string]float64, len(pids))
	for name, pid := range pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}
