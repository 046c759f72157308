// Command wfguard is the hardened Argo Workflows controller and its tools.
package main

import (
	"fmt"
	"io"
	"os"
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

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "controller":
		return runController(args[1:], stderr)
	case "demo", "up":
		// The playground lives in its own binary, so this one (the image's) links no control plane or simulated node.
		fmt.Fprintf(stderr, "wfguard: %q is a command of the playground binary wfguard-sandbox, not of the controller's: "+
			"run 'make %s', or 'go run ./cmd/wfguard-sandbox %s' from the wfguard module\n", args[0], args[0], args[0])
		return 2
	case "action":
		return runAction(args[1:], stdout, stderr)
	case "explain":
		return runExplain(args[1:], stdout, stderr)
	case "doctor":
		return runDoctor(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "wfguard: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
