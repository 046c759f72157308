package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Options size the scenarios. Defaults fit a 2-core machine in well under 15 minutes.
type Options struct {
	ControlPlane controlplane.Options
	// Workers of the controller under test (the binary's default is 32).
	Workers int
	// CoalesceWindow is the controller's StatusCoalesceWindow (the binary's default is 1s).
	CoalesceWindow time.Duration

	LatencyChains, ChainLength  int // scheduling latency: chains run one at a time
	LatencyFanOuts, FanOutWidth int // scheduling latency: root → width children, one at a time
	ThroughputWorkflows         int // throughput: concurrent workflows ...
	ThroughputNodes             int // ... each a chain of this many pods
	Actions                     int // concurrent WorkflowActions (each kind)
	OrphanPods                  int
	LateResultWorkflows         int // throughput under a delayed task-result informer
	LateResultDelay             time.Duration
	MemoryWorkflows             int
	// ControllerBinary is the wfguard binary the memory scenario runs as its own process ("" skips it,
	// reported as not run).
	ControllerBinary string
	// Only, when non-empty, runs just the named scenarios (latency, throughput, actions, orphans,
	// lateresults, memory).
	Only []string

	Logger   *slog.Logger
	Progress io.Writer
}

// Defaults returns the sizes `make bench` uses.
func Defaults() Options {
	return Options{Workers: 32, CoalesceWindow: time.Second, LatencyChains: 10, ChainLength: 6, LatencyFanOuts: 5, FanOutWidth: 10,
		ThroughputWorkflows: 100, ThroughputNodes: 5, Actions: 50, OrphanPods: 5000,
		LateResultWorkflows: 20, LateResultDelay: 30 * time.Second, MemoryWorkflows: 10000}
}

// scenarios are the scenario names, in the order they run.
var scenarios = []string{"latency", "throughput", "actions", "orphans", "lateresults", "memory"}

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
	cp     *controlplane.ControlPlane
	config *rest.Config
	kube   kubernetes.Interface
	argo   versioned.Interface
}

// Run starts an embedded control plane, runs the scenarios and returns the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.progressf("bench: starting the embedded control plane")
	cp, err := controlplane.Start(ctx, opts.ControlPlane)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	e := &env{opts: opts, cp: cp, config: cp.Config()}
	e.kube = kubernetes.NewForConfigOrDie(e.config)
	e.argo = versioned.NewForConfigOrDie(e.config)
	report := newReport(opts)
	type scenario struct {
		name string
		run  func(context.Context, *Report) error
	}
	for _, s := range []scenario{
		{"latency", e.latency}, {"throughput", e.throughput}, {"actions", e.actions},
		{"orphans", e.orphans}, {"lateresults", e.lateResults}, {"memory", e.memory},
	} {
		if !opts.wants(s.name) {
			continue
		}
		opts.progressf("bench: %s ...", s.name)
		begin := time.Now()
		if err := s.run(ctx, report); err != nil {
			return report, fmt.Errorf("scenario %s: %w", s.name, err)
		}
		opts.progressf("bench: %s done in %s", s.name, time.Since(begin).Round(time.Millisecond))
	}
	report.evaluate()
	return report, nil
}

// namespace creates a fresh namespace for a scenario.
func (e *env) namespace(ctx context.Context, prefix string) (string, error) {
	return controlplane.CreateNamespace(ctx, e.config, prefix)
}

// running is an in-process controller and simulated node working one namespace.
type running struct {
	ctrl     *sandbox.Controller
	registry *prometheus.Registry
	node     *simnode.Node
}

type runOptions struct {
	ns           string
	config       *rest.Config // the controller's (possibly counted) config
	script       simnode.Script
	wrap         func(resource string, lw cache.ListerWatcher) cache.ListerWatcher
	noNode       bool
	noController bool
}

func (e *env) start(ctx context.Context, o runOptions) (*running, error) {
	if o.config == nil {
		o.config = e.config
	}
	r := &running{registry: prometheus.NewRegistry()}
	runCtx := context.WithoutCancel(ctx)
	var err error
	if !o.noController {
		r.ctrl, err = sandbox.StartController(runCtx, o.config, controller.Options{Namespace: o.ns, Workers: e.opts.Workers, StatusFinalizer: true,
			Validate: controller.ArgoValidator(e.argo), Logger: e.opts.Logger, Registry: r.registry, WrapListWatch: o.wrap,
			OrphanSweepInterval: time.Minute, StatusCoalesceWindow: e.opts.CoalesceWindow})
		if err != nil {
			return nil, err
		}
	}
	if !o.noNode {
		r.node, err = simnode.Start(runCtx, simnode.Options{Config: e.config, Namespace: o.ns, Script: o.script, Logf: func(string, ...any) {}})
		if err != nil {
			_ = r.stop()
			return nil, err
		}
	}
	return r, nil
}

// waitSynced waits until the controller's caches are synced, so runs do not measure start-up.
func (r *running) waitSynced(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return r.ctrl.Ready(), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller's caches: %w", err)
	}
	return nil
}

func (r *running) stop() error {
	if r.node != nil {
		r.node.Stop()
	}
	if r.ctrl == nil {
		return nil
	}
	if err := r.ctrl.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// counter sums a counter family of the controller's registry over all label values.
func (r *running) counter(name string) float64 {
	sum := 0.0
	for key, v := range r.counters() {
		if key == name || strings.HasPrefix(key, name+"{") {
			sum += v
		}
	}
	return sum
}

// counters returns every wfguard counter of the controller by name and labels, for the report.
func (r *running) counters() map[string]float64 {
	out := map[string]float64{}
	families, err := r.registry.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m.GetCounter().GetValue()
		}
	}
	return out
}
