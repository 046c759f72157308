package bench

import (
	"os"
	"strings"
	"testing"
)

func TestProcReaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stat    string
		wantCPU float64
		wantErr bool
	}{
		{"utime and stime are summed and turned from clock ticks into seconds",
			"4242 (wfguard) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 130 0 0 20 0 12 0 100 0 0", 3.8, false},
		{"a command name with spaces and parentheses does not shift the fields",
			"77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0", 0.1, false},
		{"a line cut short is an error, not zero",
			"77 (x) R 1 77 77", 0, true},
		{"a line without a command name is an error",
			"77 x R 1", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPUSeconds(tc.stat)
			if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.wantCPU) {
				t.Errorf("parseCPUSeconds = %v, %v; want %v (error %v)", got, err, tc.wantCPU, tc.wantErr)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		status  string
		want    float64
		wantErr bool
	}{
		{"VmRSS in kB is read as bytes", "Name:\twfguard\nVmPeak:\t  900 kB\nVmRSS:\t   2048 kB\nThreads:\t12\n", 2048 * 1024, false},
		{"a status without VmRSS is an error", "Name:\tzombie\nState:\tZ (zombie)\n", 0, true},
		{"a VmRSS in another unit is an error", "VmRSS:\t2 MB\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRSSBytes(tc.status)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseRSSBytes = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		stat    string
		want    float64
		wantErr bool
	}{
		{"every field but idle and iowait counts, guest time being in user already",
			"cpu  1000 20 300 5000 70 0 40 5 100 0\ncpu0 500 10 150 2500 35 0 20 2 50 0\n", 13.65, false},
		{"a kernel without guest fields still has the eight", "cpu  100 0 100 900 0 0 0 0\n", 2, false},
		{"a first line that is not the machine's cpu line is an error", "cpu0 1 2 3 4 5 6 7 8\n", 0, true},
		{"a line cut short is an error, not zero", "cpu  1 2 3\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBusySeconds(tc.stat)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseBusySeconds = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
	t.Run("this process's own CPU time and RSS are read from /proc", func(t *testing.T) {
		if cpu, err := cpuSeconds(os.Getpid()); err != nil || cpu < 0 {
			t.Errorf("cpuSeconds(self) = %v, %v", cpu, err)
		}
		if rss, err := rssBytes(os.Getpid()); err != nil || rss <= 0 {
			t.Errorf("rssBytes(self) = %v, %v", rss, err)
		}
		if busy, err := machineBusySeconds(); err != nil || busy <= 0 {
			t.Errorf("machineBusySeconds() = %v, %v", busy, err)
		}
	})
}

func TestMemorySettles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float64
		want    bool
	}{
		{"too few samples have not settled", []float64{100, 100}, false},
		{"three samples within 1% have settled", []float64{50, 100, 100.5, 101}, true},
		{"a sample still growing has not settled", []float64{100, 100, 103}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := settled(tc.samples, 3, 0.01); got != tc.want {
				t.Errorf("settled(%v) = %v, want %v", tc.samples, got, tc.want)
			}
		})
	}
}

func TestCPUByProcessNamesEachProcessAndTheOneItCouldNotRead(t *testing.T) {
	got, err := cpuByProcess(map[string]int{benchProcess: os.Getpid()})
	// A process may not have used a clock tick yet: zero is a reading, a missing key is not.
	if cpu, ok := got[benchProcess]; err != nil || len(got) != 1 || !ok || cpu < 0 {
		t.Errorf("this test's own process: %v, %v; want its one reading", got, err)
	}
	// PID_MAX_LIMIT is 2^22: no process has a larger ID.
	if _, err := cpuByProcess(map[string]int{"kube-apiserver": 1<<22 + 1}); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("a process that is gone: err %v, want one naming it", err)
	}
}
