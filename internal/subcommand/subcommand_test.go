package subcommand

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRunPicksTheCommandOrAnswersWithTheUsage(t *testing.T) {
	commands := map[string]Func{"greet": func(args []string, stdout, _ io.Writer) int {
		stdout.Write([]byte("hello " + strings.Join(args, " ")))
		return 3
	}}
	cases := []struct {
		name                string
		args                []string
		wantCode            int
		wantStdout, wantErr string
	}{
		{"a command gets the arguments after its name and gives its exit code", []string{"greet", "a", "b"}, 3, "hello a b", ""},
		{"help prints the usage to stdout", []string{"help"}, 0, "USAGE", ""},
		{"--help prints the usage to stdout", []string{"--help"}, 0, "USAGE", ""},
		{"no command prints the usage to stderr", nil, 2, "", "USAGE"},
		{"an unknown command is named with the binary, before the usage", []string{"nope"}, 2, "", "tool: unknown command \"nope\"\n\nUSAGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Run("tool", "USAGE", commands, tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if stdout.String() != tc.wantStdout || stderr.String() != tc.wantErr {
				t.Errorf("stdout %q, stderr %q; want %q and %q", stdout.String(), stderr.String(), tc.wantStdout, tc.wantErr)
			}
		})
	}
}
