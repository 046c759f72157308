package bench

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/compat"
	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// The controllers the bench can run, by their names in --controllers and in the report.
const (
	ControllerWFGuard = "wfguard"
	ControllerArgo    = "argo"
	// rawClient names the raw client's column.
	rawClient = "raw client"
)

// Controllers are the controller names, in the order the bench runs them.
var Controllers = []string{ControllerWFGuard, ControllerArgo}

// IsController reports whether name is a controller Options.Controllers accepts.
func IsController(name string) bool {
	for _, c := range Controllers {
		if c == name {
			return true
		}
	}
	return false
}

// process is a controller under test running as its own process, its API traffic through a counting proxy.
type process struct {
	name  string
	proc  *controlplane.Process
	stopF func() error
	// proxy counts its calls; its log holds the proxy's errors (e.g. argo's exec into pods, an upgrade it
	// does not forward).
	proxy *apiProxy
	calls *callCounter
	// metricsURL is the controller's /metrics ("" when it serves none).
	metricsURL string
	// profileURL is the controller's /debug/pprof/ ("" when it serves none: see env.profiling).
	profileURL string
}

type processOptions struct {
	// delayResults delays the controller's workflowtaskresults watch events (the late-results scenario).
	delayResults time.Duration
	// metrics asks argo to serve /metrics too (wfguard always does); argo's port is fixed per process.
	metrics bool
}

// startController starts controller name on namespace ns with the bench's workers, QPS and burst; its
// kubeconfig points at a fresh proxy, so every API call it makes is counted.
func (e *env) startController(ctx context.Context, name, ns string, o processOptions) (*process, error) {
	p := &process{name: name, calls: newCallCounter()}
	var err error
	if p.proxy, err = startProxy(e.config, p.calls, proxyOptions{DelayResults: o.delayResults, LogPath: filepath.Join(e.tmp, ns+"-"+name+"-proxy.log")}); err != nil {
		return nil, err
	}
	abort := func(err error) (*process, error) {
		p.proxy.close()
		return nil, err
	}
	kubeconfig := filepath.Join(e.tmp, ns+"-"+name+".kubeconfig")
	if err := writeKubeconfig(kubeconfig, p.proxy.URL(), ns); err != nil {
		return abort(err)
	}
	logPath := filepath.Join(e.tmp, ns+"-"+name+".log")
	port, err := freePort()
	if err != nil {
		return abort(err)
	}
	switch name {
	case ControllerWFGuard:
		proc, err := compat.StartWFGuard(compat.WFGuardOptions{Binary: e.opts.ControllerBinary, Kubeconfig: kubeconfig, Namespace: ns,
			ExecutorImage: e.image, Workers: e.opts.Workers, QPS: e.opts.QPS, Burst: e.opts.Burst, LogPath: logPath,
			Args: []string{"--metrics-port=" + strconv.Itoa(port), "--status-coalesce-window=" + e.opts.CoalesceWindow.String(),
				"--orphan-sweep-interval=1m", "--log-level=" + cmp.Or(e.opts.ControllerLogLevel, defaultControllerLogLevel), "--profiling=" + strconv.FormatBool(e.profiling())}})
		if err != nil {
			return abort(err)
		}
		p.proc, p.stopF = proc, func() error { return proc.Stop(30 * time.Second) }
		p.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		if e.profiling() {
			p.profileURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port)
		}
	case ControllerArgo:
		config := map[string]string{}
		if o.metrics {
			config["metricsConfig"] = fmt.Sprintf("enabled: true\nport: %d\nsecure: false\n", port)
			p.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		}
		oracle, err := compat.StartOracle(ctx, e.config, compat.OracleOptions{Root: e.root, Kubeconfig: kubeconfig, Namespace: ns,
			ExecutorImage: e.image, Workers: e.opts.Workers, QPS: float32(e.opts.QPS), Burst: e.opts.Burst, LogPath: logPath, ConfigData: config,
			Env: []string{common.EnvVarPodStatusCaptureFinalizer + "=true"}})
		if err != nil {
			return abort(err)
		}
		p.proc, p.stopF = oracle.Process, oracle.Stop
	default:
		return abort(fmt.Errorf("unknown controller %q", name))
	}
	return p, nil
}

// stop ends the controller, then its proxy.
func (p *process) stop() error {
	err := p.stopF()
	p.proxy.close()
	if err != nil {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	return nil
}

// failed wraps err with the end of the controller's log, so a run that hangs or fails says why.
func (p *process) failed(err error) error {
	if err == nil {
		return nil
	}
	tail := strings.TrimSpace(p.proc.LogTail(15))
	if exited, werr := p.proc.Exited(); exited {
		return fmt.Errorf("%s (exited: %v): %w\n%s log (last lines):\n%s", p.name, werr, err, p.name, tail)
	}
	return fmt.Errorf("%s: %w\n%s log (last lines):\n%s", p.name, err, p.name, tail)
}

// cpuSeconds is the controller process's CPU time so far.
func (p *process) cpuSeconds() (float64, error) { return cpuSeconds(p.proc.Pid()) }

// rss is the controller process's resident set size.
func (p *process) rss() (float64, error) { return rssBytes(p.proc.Pid()) }

// metrics scrapes the controller's /metrics (nil when it serves none).
func (p *process) metrics(ctx context.Context) (map[string]float64, error) {
	if p.metricsURL == "" {
		return nil, nil
	}
	return scrape(ctx, p.metricsURL)
}

// counters are the controller's own wfguard_* counters by name and labels (none for argo).
func (p *process) counters(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	if p.name != ControllerWFGuard {
		return out
	}
	m, err := p.metrics(ctx)
	if err != nil {
		return out
	}
	for k, v := range m {
		if strings.HasPrefix(k, "wfguard_") && strings.Contains(k, "_total") {
			out[k] = v
		}
	}
	return out
}

// warmUp runs one single-pod workflow to completion, so that what follows measures neither process start
// nor cache sync, then forgets the calls it made.
func (e *env) warmUp(ctx context.Context, p *process, obs *observer) error {
	wf := chainWorkflow("warmup", 1)
	if err := createAll(ctx, e.argo, obs.namespace, []*wfv1.Workflow{wf}); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := obs.waitWorkflows(waitCtx, []string{wf.Name}); err != nil {
		return p.failed(fmt.Errorf("warming up: %w", err))
	}
	if err := allSucceeded(obs, []string{wf.Name}); err != nil {
		return p.failed(fmt.Errorf("warming up: %w", err))
	}
	if err := obs.waitReleased(waitCtx); err != nil {
		return p.failed(fmt.Errorf("warming up: %w", err))
	}
	if p.name == ControllerWFGuard {
		// The release's watch event can beat the PATCH response wfguard counts it from: wait for the count,
		// so the warm-up's release is not taken for the run's.
		if err := wait.PollUntilContextTimeout(waitCtx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return p.counters(ctx)["wfguard_pod_finalizers_released_total"] >= 1, nil
		}); err != nil {
			return p.failed(fmt.Errorf("warming up: waiting for wfguard to count the warm-up pod's release: %w", err))
		}
	}
	p.calls.reset()
	return nil
}
