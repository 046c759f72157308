package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/bench"
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

// TestTheReportIsPrintedAndSavedWhereOutSays pins what follows a run: the report and its time on stdout,
// then the JSON file under --out and where it went, or why it could not be written.
func TestTheReportIsPrintedAndSavedWhereOutSays(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "results")
	for _, tc := range []struct {
		name     string
		out      string
		wantCode int
		// wantTail ends stdout; wantErr is all of stderr.
		wantTail string
		wantErr  string
	}{
		{name: "no --out prints the report only", out: "", wantTail: "\nbench finished in 0s\n"},
		{name: "--out creates its directory and names the file written there", out: saved,
			wantTail: "\nbench finished in 0s\nreport written to " + filepath.Join(saved, "2026-01-02T030405Z.json") + "\n"},
		{name: "an --out that cannot be a directory says why", out: filepath.Join(blocked, "results"), wantCode: 1,
			wantTail: "\nbench finished in 0s\n", wantErr: "wfguard-bench: mkdir " + blocked + ": not a directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			report := &bench.Report{Date: date}
			if code := writeReport(report, tc.out, time.Now(), &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			var text bytes.Buffer
			report.WriteText(&text)
			if got := stdout.String(); got != text.String()+tc.wantTail {
				t.Errorf("stdout = %q, want the report then %q", got, tc.wantTail)
			}
			if got := stderr.String(); got != tc.wantErr {
				t.Errorf("stderr = %q, want %q", got, tc.wantErr)
			}
			if tc.out == "" || tc.wantCode != 0 {
				return
			}
			data, err := os.ReadFile(filepath.Join(tc.out, "2026-01-02T030405Z.json"))
			if err != nil {
				t.Fatal(err)
			}
			var back bench.Report
			if err := json.Unmarshal(data, &back); err != nil || !back.Date.Equal(date) {
				t.Errorf("saved report = %s (%v), want the report of %s", data, err, date)
			}
		})
	}
}
