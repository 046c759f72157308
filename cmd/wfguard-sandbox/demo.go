package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wfguard/wfguard/internal/cmdlog"
	"github.com/wfguard/wfguard/sandbox"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wfguard-sandbox demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	examples := fs.String("examples", "examples", "directory of example workflows (*.yaml)")
	binDir := fs.String("bin-dir", "", "directory with etcd and kube-apiserver (default <module root>/bin, built by `make tools`)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the workflows")
	log, code := parseSandboxFlags(fs, args, "warn", stderr)
	if log == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ok, err := demo.Run(ctx, demo.Options{ExamplesDir: *examples, ControlPlane: controlplane.Options{BinDir: *binDir},
		Timeout: *timeout, Out: stdout, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "wfguard-sandbox demo: %v\n", err)
		return 1
	}
	if !ok {
		fmt.Fprintln(stdout, "demo: FAILED (see the table and invariants above)")
		return 1
	}
	fmt.Fprintln(stdout, "demo: OK")
	return 0
}

func runUp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wfguard-sandbox up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir, _ := os.UserCacheDir()
	kubeconfigOut := fs.String("kubeconfig-out", filepath.Join(cacheDir, "wfguard", "kubeconfig"), "where to write the sandbox's kubeconfig")
	binDir := fs.String("bin-dir", "", "directory with etcd and kube-apiserver (default <module root>/bin)")
	namespace := fs.String("namespace", "default", "namespace to prepare for workflows")
	log, code := parseSandboxFlags(fs, args, "info", stderr)
	if log == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	sb, err := sandbox.Start(ctx, sandbox.Options{ControlPlane: controlplane.Options{BinDir: *binDir}, Namespace: *namespace, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "wfguard-sandbox up: %v\n", err)
		return 1
	}
	code = 0
	if err := copyFile(sb.ControlPlane.Kubeconfig, *kubeconfigOut); err != nil {
		fmt.Fprintf(stderr, "wfguard-sandbox up: %v\n", err)
		code = 1
	} else {
		fmt.Fprintf(stdout, "wfguard sandbox is up: kube-apiserver %s, controller and simulated node running.\n"+
			"  export KUBECONFIG=%s\n  kubectl -n %s create -f examples/hello.yaml\nPress Ctrl-C to stop.\n",
			sb.Config().Host, *kubeconfigOut, *namespace)
		<-ctx.Done()
		fmt.Fprintln(stdout, "stopping the sandbox")
	}
	if err := sb.Stop(); err != nil {
		fmt.Fprintf(stderr, "wfguard-sandbox up: stopping: %v\n", err)
		code = 1
	}
	_ = os.Remove(*kubeconfigOut)
	return code
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// parseSandboxFlags adds the controller log flags shared by demo and up, parses args and builds the logger;
// a nil logger comes with the exit code to return.
func parseSandboxFlags(fs *flag.FlagSet, args []string, level string, stderr io.Writer) (*slog.Logger, int) {
	logFormat := fs.String("log-format", "text", "controller log format: json or text")
	logLevel := fs.String("log-level", level, "controller log level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	log, err := cmdlog.New(*logFormat, *logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, 2
	}
	return log, 0
}
