package interop

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// startServer starts `argo server` from bin/argo for namespace (namespaced, --auth-mode=server so it acts
// with its kubeconfig's identity, plain HTTP, no UI files) and returns its address once it answers.
func (e *Env) startServer(ctx context.Context, namespace, logPath string) (string, error) {
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return "", err
	}
	port := ports[0]
	p, err := controlplane.StartProcess("argo server", e.Argo, logPath, []string{"server",
		"--kubeconfig=" + e.Kubeconfig, "--namespace=" + namespace, "--namespaced", "--managed-namespace=" + namespace,
		"--auth-mode=server", "--secure=false", "--port=" + strconv.Itoa(port), "--browser=false"},
		[]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")})
	if err != nil {
		return "", err
	}
	e.stops = append(e.stops, func() error { return p.Stop(10 * time.Second) })
	addr := "localhost:" + strconv.Itoa(port)
	// No kept-alive connection outlives the wait (goleak).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("argo server exited (%v): %s", err, p.LogTail(20))
		}
		// A list goes through the server's HTTP gateway to its gRPC service, which answers 503 for a while after
		// /api/v1/version already does: ready is when the API the CLI and the UI call answers.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/workflows/"+namespace+"?listOptions.limit=1", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for argo server on %s: %w\n%s", addr, err, p.LogTail(20))
	}
	return addr, nil
}
