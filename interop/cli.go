package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// CLI runs bin/argo as a user would, in one mode against one namespace, with an environment holding only
// what that mode needs (no ARGO_* or KUBECONFIG of the caller's).
type CLI struct {
	Binary string
	// Env is the command's whole environment.
	Env []string
	// Timeout bounds each command. Default 2 minutes.
	Timeout time.Duration
}

// KubeCLI is the CLI in kubernetes mode on namespace.
func KubeCLI(binary, home, kubeconfig, namespace string) *CLI {
	return &CLI{Binary: binary, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"KUBECONFIG=" + kubeconfig, "ARGO_NAMESPACE=" + namespace}}
}

// ServerCLI is the CLI talking to argo-server at address (host:port, plain HTTP/1) on namespace. ARGO_TOKEN
// is set and empty: the server runs with --auth-mode=server, and the CLI would otherwise read a kubeconfig.
func ServerCLI(binary, home, address, namespace string) *CLI {
	return &CLI{Binary: binary, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"ARGO_SERVER=" + address, "ARGO_HTTP1=true", "ARGO_SECURE=false", "ARGO_TOKEN=", "ARGO_NAMESPACE=" + namespace}}
}

// Output is what one command did.
type Output struct {
	Exit           int
	Stdout, Stderr string
}

// Run runs argo with args in dir. Only a command that could not start (or was killed by the timeout) is an
// error; a non-zero exit is an Output.
func (c *CLI) Run(ctx context.Context, dir string, args ...string) (Output, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Binary, args...)
	cmd.Dir, cmd.Env = dir, c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out, fmt.Errorf("argo %v: %w after %s", args, ctx.Err(), timeout)
	case errors.As(err, &exit):
		out.Exit = exit.ExitCode()
	case err != nil:
		return out, fmt.Errorf("running argo %v: %w", args, err)
	}
	return out, nil
}
