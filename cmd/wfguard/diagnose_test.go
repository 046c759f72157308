package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wfguard/wfguard/doctor"
)

// unreachableKubeconfig points at a port nothing listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExplainAndDoctorGiveClearErrorsAndExitCodes(t *testing.T) {
	down := unreachableKubeconfig(t)
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"explain needs a workflow", []string{"explain"}, 2, []string{"missing WORKFLOW", "Usage: wfguard explain"}},
		{"explain refuses two workflows", []string{"explain", "a", "b"}, 2, []string{"unexpected arguments b"}},
		{"explain refuses an unknown format", []string{"explain", "a", "-o", "yaml"}, 2, []string{`-o must be json or empty, got "yaml"`}},
		{"explain of a missing workflow says so", []string{"explain", "absent", "-n", "default", "--kubeconfig", cp.Kubeconfig}, 1,
			[]string{"wfguard explain: workflow default/absent not found"}},
		{"explain against an unreachable API server names it", []string{"explain", "wf", "--kubeconfig", down}, 1,
			[]string{"cannot get workflow wf in namespace team: API server unreachable"}},
		{"doctor refuses -n with -A", []string{"doctor", "-n", "x", "-A"}, 2, []string{"-n and -A exclude each other"}},
		{"doctor refuses --yes without --fix", []string{"doctor", "--yes"}, 2, []string{"--yes only applies with --fix"}},
		{"doctor refuses arguments", []string{"doctor", "wf"}, 2, []string{`unexpected argument "wf"`}},
		{"doctor on a healthy cluster exits 0", []string{"doctor", "-n", "default", "--kubeconfig", cp.Kubeconfig}, 0,
			[]string{"wfguard doctor: namespace default", "workflow-crd: ok", "no problems found"}},
		{"doctor against an unreachable API server skips every check", []string{"doctor", "--kubeconfig", down}, doctor.ExitIncomplete,
			[]string{"namespace team", "partial-success: not checked\n  skipped: cannot reach the API server https://127.0.0.1:1",
				"workflow-crd: not checked", "7 of 7 checks incomplete"}},
		{"doctor --fix on a healthy namespace plans nothing", []string{"doctor", "-n", "default", "--fix", "--kubeconfig", cp.Kubeconfig}, 0,
			[]string{"Repairs (dry run", "none: no problem has a safe automatic repair"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(tc.args, &out, &out); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; output:\n%s", code, tc.wantCode, out.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestDoctorJSONIsTheReport(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"doctor", "-n", "default", "-o", "json", "--kubeconfig", cp.Kubeconfig}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d: %s%s", code, out.String(), errOut.String())
	}
	var r doctor.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if r.Namespace != "default" || len(r.Checks) != 7 || r.Problems() != 0 {
		t.Errorf("report %+v", r)
	}
}
