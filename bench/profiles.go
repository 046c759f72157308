package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuProfileSeconds is how long the throughput run's CPU profile of wfguard samples, from the submit.
const cpuProfileSeconds = 30

// profiling reports whether wfguard is started with --profiling: only when the run keeps its logs, since
// the profiles are saved beside them.
func (e *env) profiling() bool { return e.opts.LogDir != "" }

// startAPIServerCPUProfile starts a cpuProfileSeconds CPU profile of the API server into path, through the
// bench's admin client; nil when the run keeps no logs (the API server then serves no profiles). A
// subject's excess over another is partly the API server's (docs/performance.md), so each throughput run
// profiles it too, whoever the subject.
func (e *env) startAPIServerCPUProfile(ctx context.Context, path string) *profileCapture {
	if !e.profiling() {
		return nil
	}
	c := &profileCapture{done: make(chan error, 1)}
	go func() {
		ctx, cancel := context.WithTimeout(ctx, cpuProfileSeconds*time.Second+time.Minute)
		defer cancel()
		body, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(cpuProfileSeconds)).DoRaw(ctx)
		if err != nil {
			c.done <- fmt.Errorf("profiling the API server: %w", err)
			return
		}
		if err := os.WriteFile(filepath.Clean(path), body, 0o644); err != nil {
			c.done <- fmt.Errorf("saving the API server's profile: %w", err)
			return
		}
		c.done <- nil
	}()
	return c
}

// wait returns the capture's outcome once its profile is saved; nothing for a nil capture.
func (c *profileCapture) wait() error {
	if c == nil {
		return nil
	}
	return <-c.done
}

// profileCapture is a CPU profile being taken while the scenario runs.
type profileCapture struct {
	done chan error
}

// startCPUProfile starts a cpuProfileSeconds CPU profile of p into path; nil when p serves no profiles.
func (p *process) startCPUProfile(ctx context.Context, path string) *profileCapture {
	if p.profileURL == "" {
		return nil
	}
	c := &profileCapture{done: make(chan error, 1)}
	go func() {
		c.done <- fetchProfile(ctx, fmt.Sprintf("%sprofile?seconds=%d", p.profileURL, cpuProfileSeconds), path)
	}()
	return c
}

// saveProfiles waits for the CPU profile (it ends cpuProfileSeconds after it started) and saves a heap
// profile of p and its /metrics text beside it (pathPrefix + "heap.pprof", + "metrics.txt": the queue's
// wait and work histograms explain a latency the profile does not). A profile that fails is the run's
// error: it was asked for.
func (p *process) saveProfiles(ctx context.Context, cpu *profileCapture, pathPrefix string) error {
	if cpu == nil {
		return nil
	}
	if err := <-cpu.done; err != nil {
		return err
	}
	if err := fetchProfile(ctx, p.profileURL+"heap", pathPrefix+"heap.pprof"); err != nil {
		return err
	}
	return fetchProfile(ctx, p.metricsURL, pathPrefix+"metrics.txt")
}

// saveMetrics saves p's /metrics text into path when the run keeps its logs and p serves metrics: the
// actions scenario's before and after its bursts, whose difference is the bursts' queue waits and passes.
func (p *process) saveMetrics(ctx context.Context, keep bool, path string) error {
	if !keep || p.metricsURL == "" {
		return nil
	}
	if err := fetchProfile(ctx, p.metricsURL, path); err != nil {
		return fmt.Errorf("saving the controller's metrics: %w", err)
	}
	return nil
}

// saveEndHeapProfile saves a heap profile of p taken after a garbage collection (pathPrefix +
// "end-heap.pprof"): what the controller still holds once a run is over. Nothing when p serves no profiles.
func (p *process) saveEndHeapProfile(ctx context.Context, pathPrefix string) error {
	if p.profileURL == "" {
		return nil
	}
	return fetchProfile(ctx, p.profileURL+"heap?gc=1", pathPrefix+"end-heap.pprof")
}

// fetchProfile writes the body of url (a pprof endpoint) into path.
func fetchProfile(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, cpuProfileSeconds*time.Second+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("profiling the controller: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profiling the controller (%s): %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("profiling the controller (%s): %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return fmt.Errorf("saving the controller's profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("saving the controller's profile %s: %w", path, err)
	}
	return f.Close()
}
