package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestACommandLineThatCannotRunSaysWhyAndExitsBeforeAnyScenario pins what each refused command line prints
// and its exit code; none of them gets as far as starting a control plane.
func TestACommandLineThatCannotRunSaysWhyAndExitsBeforeAnyScenario(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		// wantErr is all of stderr, or its start when usage follows it.
		wantErr   string
		wantUsage bool
	}{
		{name: "help prints the usage", args: []string{"-h"}, wantCode: 2, wantUsage: true},
		{name: "an unknown flag is named before the usage", args: []string{"--bogus"}, wantCode: 2,
			wantErr: "flag provided but not defined: -bogus\n", wantUsage: true},
		{name: "an argument is refused", args: []string{"extra"}, wantCode: 2,
			wantErr: "wfguard-bench: unexpected arguments [extra]\n"},
		{name: "an unknown scenario is named", args: []string{"--only", "latency,nope"}, wantCode: 2,
			wantErr: "wfguard-bench: unknown scenario \"nope\" in --only\n"},
		{name: "an unknown controller is named with those there are", args: []string{"--controllers", "wfguard,nope"}, wantCode: 2,
			wantErr: "wfguard-bench: unknown controller \"nope\" in --controllers (want wfguard,argo)\n"},
		{name: "no controller is an unknown one", args: []string{"--controllers="}, wantCode: 2,
			wantErr: "wfguard-bench: unknown controller \"\" in --controllers (want wfguard,argo)\n"},
		{name: "a CPU profile that cannot be created", args: []string{"--cpuprofile", "/nonexistent/cpu.prof"}, wantCode: 1,
			wantErr: "wfguard-bench: open /nonexistent/cpu.prof: no such file or directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			got := stderr.String()
			if !tc.wantUsage && got != tc.wantErr {
				t.Errorf("stderr = %q, want %q", got, tc.wantErr)
			}
			if tc.wantUsage {
				usage, ok := strings.CutPrefix(got, tc.wantErr)
				if !ok || !strings.HasPrefix(usage, "Usage: wfguard-bench [flags]\n") || !strings.Contains(usage, "\n  -controllers string\n") ||
					!strings.Contains(usage, "\n  -cpuprofile string\n") || !strings.Contains(usage, "\n  -out string\n") {
					t.Errorf("stderr = %q, want %q and the usage with every flag", got, tc.wantErr)
				}
			}
		})
	}
}
