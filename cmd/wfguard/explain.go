package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wfguard/wfguard/explain"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/taskresult"
)

const explainUsage = `Usage: wfguard explain WORKFLOW [-n NS] [-o json] [flags]

Reads a workflow, its pods, task results and pending WorkflowActions straight from the API server and prints
its nodes as a tree, with what every unfinished node waits on and since when. Read-only; works against a
cluster running argo's workflow-controller or wfguard. Exit codes: 0 explained, 1 cannot read the workflow,
2 usage.
`

func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wfguard explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, explainUsage); fs.PrintDefaults() }
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := fs.String("n", "", "namespace of the workflow (default: the kubeconfig context's, else default)")
	output := fs.String("o", "", "output format: empty for text, or json")
	resultTimeout := fs.Duration("task-result-timeout", taskresult.DefaultTimeout, "the controller's --task-result-timeout, to show when a wait expires")
	requestTimeout := fs.Duration("request-timeout", 30*time.Second, "timeout of each API request")
	workflow, code := parseWithOneArg(fs, args, "WORKFLOW")
	if code >= 0 {
		return code
	}
	if *output != "" && *output != "json" {
		fmt.Fprintf(stderr, "wfguard explain: -o must be json or empty, got %q\n", *output)
		return 2
	}
	if *namespace == "" {
		*namespace = contextNamespace(*kubeconfig)
	}
	clients, err := diagnosticClients(*kubeconfig, *requestTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard explain: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	snap, err := inspect.ReadSnapshot(ctx, clients, *namespace, workflow)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard explain: %v\n", err)
		return 1
	}
	tree := explain.Explain(snap, explain.Options{Now: time.Now(), TaskResultTimeout: *resultTimeout})
	if *output == "json" {
		err = explain.WriteJSON(stdout, tree)
	} else {
		err = explain.WriteHuman(stdout, tree)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wfguard explain: writing the output: %v\n", err)
		return 1
	}
	return 0
}

// parseWithOneArg parses flags before and after exactly one positional argument. It returns the
// argument and -1, or an exit code.
func parseWithOneArg(fs *flag.FlagSet, args []string, name string) (string, int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", 0
		}
		return "", 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(fs.Output(), "%s: missing %s\n\n", fs.Name(), name)
		fs.Usage()
		return "", 2
	}
	arg := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return "", 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		return "", 2
	}
	return arg, -1
}

// diagnosticClients builds the read clients of explain and doctor, with a per-request timeout so an
// unreachable API server fails each read instead of hanging.
func diagnosticClients(kubeconfig string, timeout time.Duration) (*inspect.Clients, error) {
	config, err := restConfig(kubeconfig, 50, 100)
	if err != nil {
		return nil, err
	}
	config.UserAgent = "wfguard-diagnostics"
	config.Timeout = timeout
	return inspect.NewClients(config)
}
