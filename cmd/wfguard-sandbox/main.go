// Command wfguard-sandbox is wfguard's playground: an embedded control plane (etcd + kube-apiserver), the
// controller in process and the simulated node. It is a binary of its own so that the controller binary
// (cmd/wfguard), and with it the image, carries neither the control plane nor the simulated node.
package main

import (
	"fmt"
	"io"
	"os"
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

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "up":
		return runUp(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "wfguard-sandbox: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
