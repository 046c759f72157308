package main

import (
	"io"
	"os"

	"github.com/wfguard/wfguard/internal/subcommand"
)

const usage = `wfguard-sandbox — try wfguard without a cluster: an embedded control plane, the controller and a simulated node.

Usage:
  wfguard-sandbox demo [flags]   run examples/*.yaml on an embedded control plane and report
  wfguard-sandbox up [flags]     keep an embedded control plane + controller + simulated node running
  wfguard-sandbox help           show this help

Run it from inside the wfguard module (it finds bin/ and config/crd there).
Run 'wfguard-sandbox <command> -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var commands = map[string]subcommand.Func{"demo": runDemo, "up": runUp}

func run(args []string, stdout, stderr io.Writer) int {
	return subcommand.Run("wfguard-sandbox", usage, commands, args, stdout, stderr)
}
