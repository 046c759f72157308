package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/compat"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Options size the scenarios. With both controllers the defaults take roughly 25 minutes on 2 cores without
// scale and memory, most of it argo's latency scenario (about 10 s per hop: argo reconciles a workflow at
// most every 10 s by default); scale and memory add about 45 minutes (docs/performance.md).
type Options struct {
	ControlPlane controlplane.Options
	// Controllers are the controllers under test (ControllerWFGuard, ControllerArgo), each run as its own
	// process on the same workloads with the same workers, QPS and burst.
	Controllers []string
	// Workers, QPS and Burst of the controllers under test (--workflow-workers, --qps, --burst).
	Workers, QPS, Burst int
	// CoalesceWindow is the controller's StatusCoalesceWindow (the binary's default is 1s).
	CoalesceWindow time.Duration
	// ControllerLogLevel is wfguard's --log-level: warn by default, as logging each pass would cost the
	// measured controller CPU; info or debug to see where a run's time went (with LogDir set).
	ControllerLogLevel string

	LatencyChains, ChainLength  int // scheduling latency: chains run one at a time
	LatencyFanOuts, FanOutWidth int // scheduling latency: root → width children, one at a time
	ThroughputWorkflows         int // throughput: concurrent workflows ...
	ThroughputNodes             int // ... each a chain of this many pods
	// ThroughputRounds runs the throughput scenario this many times, each subject (controllers and raw
	// clients) once per round in an order rotated each round; figures cover every round. 0: one round per
	// subject (throughputRounds).
	ThroughputRounds    int
	Actions             int // concurrent WorkflowActions (each kind)
	OrphanPods          int
	OrphanRounds        int // orphan sweep: rounds, alternating whether the controller or the raw loop runs first
	LateResultWorkflows int // throughput under a delayed task-result informer
	LateResultDelay     time.Duration
	// HostileWorkflows are the hostile scenario's ordinary chains (ThroughputNodes pods each), run alone
	// and beside HostileBombs recursion bombs, HostileRounds times each in alternating order.
	HostileWorkflows, HostileBombs, HostileRounds int
	ScaleWorkflows                                int // scale: concurrent workflows ...
	ScalePodsPerWorkflow                          int // ... each a diamond of this many pods (root → m-2 → sink)
	MemoryWorkflows                               int
	MemoryPodsPerWorkflow                         int // memory: finished pods per completed workflow
	// ControllerBinary is the wfguard binary (`wfguard controller` is run as its own process).
	ControllerBinary string
	// Root is the wfguard module root: argo's CRDs (config/crd/argo) and bin/workflow-controller live there.
	// Default: the module holding the working directory.
	Root string
	// Only, when non-empty, runs just the named scenarios (latency, throughput, hostile, actions, orphans,
	// lateresults, scale, memory).
	Only []string

	// LogDir keeps the controllers' logs and kubeconfigs ("" : a temp dir removed at the end).
	LogDir string

	Progress io.Writer
}

// defaultControllerLogLevel is wfguard's log level unless Options say otherwise.
const defaultControllerLogLevel = "warn"

// Defaults returns the sizes `make bench` uses.
func Defaults() Options {
	return Options{Controllers: slices.Clone(Controllers), Workers: 32, QPS: 500, Burst: 1000, CoalesceWindow: time.Second, ControllerLogLevel: defaultControllerLogLevel, LatencyChains: 10, ChainLength: 6, LatencyFanOuts: 5, FanOutWidth: 10,
		ThroughputWorkflows: 100, ThroughputNodes: 5, HostileWorkflows: 100, HostileBombs: 20, HostileRounds: 4, Actions: 50, OrphanPods: 5000, OrphanRounds: 5,
		LateResultWorkflows: 20, LateResultDelay: 30 * time.Second, ScaleWorkflows: 1000, ScalePodsPerWorkflow: 10, MemoryWorkflows: 10000,
		MemoryPodsPerWorkflow: 5}
}

// scenarios are the scenario names, in the order they run.
var scenarios = []string{"latency", "throughput", "hostile", "actions", "orphans", "lateresults", "scale", "memory"}

// IsScenario reports whether name is a scenario Options.Only accepts.
func IsScenario(name string) bool {
	for _, s := range scenarios {
		if s == name {
			return true
		}
	}
	return false
}

func (o *Options) wants(name string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, n := range o.Only {
		if n == name {
			return true
		}
	}
	return false
}

func (o *Options) progressf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// env is the control plane shared by the scenarios; each scenario uses its own namespace.
type env struct {
	opts   Options
	root   string // the module root
	image  string // the executor image both controllers name in pods
	tmp    string // kubeconfigs and logs of the controllers
	cp     *controlplane.ControlPlane
	config *rest.Config
	kube   kubernetes.Interface
	argo   versioned.Interface
	// nodeLogf receives the simulated nodes' steps and errors: kept in simnode.log with --logs, where a
	// pod the node gave up on shows why.
	nodeLogf func(format string, args ...any)
}

// Run starts an embedded control plane, runs the scenarios and returns the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Controllers) == 0 {
		return nil, errors.New("no controller to measure")
	}
	for _, c := range opts.Controllers {
		if !IsController(c) {
			return nil, fmt.Errorf("unknown controller %q", c)
		}
	}
	if opts.Root == "" {
		root, err := controlplane.ModuleRoot(".")
		if err != nil {
			return nil, err
		}
		opts.Root = root
	}
	image, err := compat.ExecutorImage(opts.Root)
	if err != nil {
		return nil, err
	}
	tmp := opts.LogDir
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "wfguard-bench-"); err != nil {
			return nil, fmt.Errorf("creating the bench's temp dir: %w", err)
		}
		defer os.RemoveAll(tmp)
	} else if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", tmp, err)
	}
	if opts.LogDir != "" {
		// Profiles of the API server, saved beside wfguard's (startAPIServerCPUProfile); the flag given last wins.
		opts.ControlPlane.ExtraAPIServerArgs = append(slices.Clone(opts.ControlPlane.ExtraAPIServerArgs), "--profiling=true")
	}
	opts.progressf("bench: starting the embedded control plane")
	cp, err := controlplane.Start(ctx, opts.ControlPlane)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	e := &env{opts: opts, root: opts.Root, image: image, tmp: tmp, cp: cp, config: cp.Config(), nodeLogf: func(string, ...any) {}}
	if opts.LogDir != "" {
		nodeLog, err := os.Create(filepath.Join(tmp, "simnode.log"))
		if err != nil {
			return nil, fmt.Errorf("creating the simulated node's log: %w", err)
		}
		defer nodeLog.Close()
		e.nodeLogf = log.New(nodeLog, "", log.LstdFlags|log.Lmicroseconds).Printf
	}
	e.kube = kubernetes.NewForConfigOrDie(e.config)
	e.argo = versioned.NewForConfigOrDie(e.config)
	if e.runs(ControllerArgo) {
		if err := controlplane.InstallCRDs(ctx, e.config, filepath.Join(opts.Root, "config", "crd", "argo"), time.Minute); err != nil {
			return nil, fmt.Errorf("installing argo's CRDs: %w", err)
		}
	}
	report := newReport(opts)
	type scenario struct {
		name string
		run  func(context.Context, *Report) error
	}
	for _, s := range []scenario{
		{"latency", e.latency}, {"throughput", e.throughput}, {"hostile", e.hostile}, {"actions", e.actions},
		{"orphans", e.orphans}, {"lateresults", e.lateResults}, {"scale", e.scale}, {"memory", e.memory},
	} {
		if !opts.wants(s.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		opts.progressf("bench: %s ...", s.name)
		begin := time.Now()
		// One scenario's failure does not discard the others' figures: an hour's run keeps what it measured.
		if err := s.run(ctx, report); err != nil {
			opts.progressf("bench: %s FAILED after %s: %v", s.name, time.Since(begin).Round(time.Millisecond), err)
			report.Failures = append(report.Failures, ScenarioFailure{Scenario: s.name, Error: err.Error()})
			continue
		}
		opts.progressf("bench: %s done in %s", s.name, time.Since(begin).Round(time.Millisecond))
	}
	report.evaluate()
	if len(report.Failures) > 0 {
		return report, report.failuresError()
	}
	return report, ctx.Err()
}

// namespace creates a fresh namespace for a scenario.
func (e *env) namespace(ctx context.Context, prefix string) (string, error) {
	return controlplane.CreateNamespace(ctx, e.config, prefix)
}

// observedNamespace creates a fresh namespace for a scenario and starts the bench's observer on it (its
// namespace field names it); the caller closes the observer.
func (e *env) observedNamespace(ctx context.Context, prefix string) (*observer, error) {
	ns, err := e.namespace(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return e.observe(ctx, ns)
}

// observe starts an observer of namespace ns on a connection of its own, so its timestamps do not wait
// behind the others' traffic.
func (e *env) observe(ctx context.Context, ns string) (*observer, error) {
	config := ownConnection(e.config)
	return startObserver(ctx, kubernetes.NewForConfigOrDie(config), versioned.NewForConfigOrDie(config), ns)
}

// startNode starts the simulated node on a namespace; it runs the pods of either controller.
func (e *env) startNode(ctx context.Context, ns string, script simnode.Script) (*simnode.Node, error) {
	return simnode.Start(context.WithoutCancel(ctx), simnode.Options{Config: ownConnection(e.config), Namespace: ns, Script: script, Logf: e.nodeLogf})
}

// eachController runs f for every controller of the run, in order.
func (e *env) eachController(f func(name string) error) error {
	for _, c := range e.opts.Controllers {
		e.opts.progressf("bench:   %s", c)
		if err := f(c); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
	}
	return nil
}

func (e *env) runs(name string) bool {
	for _, c := range e.opts.Controllers {
		if c == name {
			return true
		}
	}
	return false
}

// machineCPU is the CPU time so far of the processes a run shares the machine with (the control plane's
// components and the bench process), and of every process on the machine (machineBusySeconds).
func (e *env) machineCPU() (byProcess map[string]float64, busy float64, err error) {
	pids := e.cp.Components()
	pids[benchProcess] = os.Getpid()
	if byProcess, err = cpuByProcess(pids); err != nil {
		return nil, 0, err
	}
	busy, err = machineBusySeconds()
	return byProcess, busy, err
}
