// Command wfguard is the hardened Argo Workflows controller and its tools.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/wfguard/wfguard/internal/subcommand"
)

const usage = `wfguard — a hardened reconciliation core for Argo Workflows.

Usage:
  wfguard controller [flags]   run the workflow controller (replaces argo's workflow-controller)
  wfguard action ACTION WF     suspend|resume|stop|terminate a workflow and wait for the outcome
  wfguard explain WF [-n NS]   show a workflow's nodes and what each unfinished one waits on (read-only)
  wfguard doctor [-n NS | -A]  audit for partial successes, stuck results, finalizers, actions (--fix)
  wfguard help                 show this help

Run 'wfguard <command> -h' for a command's flags.
To try wfguard without a cluster: wfguard-sandbox demo|up (make demo, make up).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are wfguard's; demo and up are wfguard-sandbox's, so that this binary (the image's) links no
// control plane or simulated node, and they only say where they went.
var commands = map[string]subcommand.Func{
	"controller": func(args []string, _, stderr io.Writer) int { return runController(args, stderr) },
	"action":     runAction,
	"explain":    runExplain,
	"doctor":     runDoctor,
	"demo":       movedToTheSandboxBinary("demo"),
	"up":         movedToTheSandboxBinary("up"),
}

func run(args []string, stdout, stderr io.Writer) int {
	return subcommand.Run("wfguard", usage, commands, args, stdout, stderr)
}

func movedToTheSandboxBinary(name string) subcommand.Func {
	return func(_ []string, _, stderr io.Writer) int {
		fmt.Fprintf(stderr, "wfguard: %q is a command of the playground binary wfguard-sandbox, not of the controller's: "+
			"run 'make %s', or 'go run ./cmd/wfguard-sandbox %s' from the wfguard module\n", name, name, name)
		return 2
	}
}
