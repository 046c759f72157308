// Command wfguard-bench measures wfguard's controller and stock argo's workflow-controller, each as its own
// process, on an embedded control plane and reports side by side against DESIGN.md's performance targets
// (run it with `make bench`).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/wfguard/wfguard/bench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run reads the command line, runs the scenarios and reports them; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	inv, ok := parseArgs(args, stderr)
	if !ok {
		return 2
	}
	inv.opts.Progress = stderr
	if inv.cpuProfile != "" {
		stopProfile, err := startCPUProfile(inv.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
			return 1
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	begin := time.Now()
	report, runErr := bench.Run(ctx, inv.opts)
	if report == nil {
		fmt.Fprintf(stderr, "wfguard-bench: %v\n", runErr)
		return 1
	}
	code := writeReport(report, inv.out, begin, stdout, stderr)
	// A failed scenario still leaves the others' figures: print and keep them, then exit non-zero.
	if runErr != nil {
		fmt.Fprintf(stderr, "wfguard-bench: %v\n", runErr)
		code = 1
	}
	return code
}

// invocation is what the command line asks for: the bench's options and what this command does around them.
type invocation struct {
	opts bench.Options
	// controllers and only are the comma-separated lists of --controllers and --only, read into opts.
	controllers string
	only        string
	out         string
	cpuProfile  string
}

// parseArgs reads the command line; when it cannot run, it has said why on stderr and returns false.
func parseArgs(args []string, stderr io.Writer) (*invocation, bool) {
	inv := &invocation{opts: bench.Defaults()}
	fs := flag.NewFlagSet("wfguard-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: wfguard-bench [flags]\n\nRuns the benchmark scenarios on an embedded etcd + kube-apiserver with the simulated node,\nprints a report and writes it as JSON.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	inv.define(fs)
	if err := fs.Parse(args); err != nil {
		return nil, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wfguard-bench: unexpected arguments %v\n", fs.Args())
		return nil, false
	}
	if err := inv.readLists(); err != nil {
		fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
		return nil, false
	}
	return inv, true
}

// define declares every flag into inv; the bench's options default to those inv holds.
func (inv *invocation) define(fs *flag.FlagSet) {
	o := &inv.opts
	fs.StringVar(&inv.controllers, "controllers", strings.Join(o.Controllers, ","), "comma-separated controllers to measure, each as its own process: wfguard (bin/wfguard controller), argo (stock bin/workflow-controller from make argo-tools)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "controller reconcile workers (--workflow-workers of both controllers)")
	fs.IntVar(&o.QPS, "qps", o.QPS, "API client queries per second of both controllers (--qps)")
	fs.IntVar(&o.Burst, "burst", o.Burst, "API client burst of both controllers (--burst)")
	fs.DurationVar(&o.CoalesceWindow, "status-coalesce-window", o.CoalesceWindow, "the controller's --status-coalesce-window")
	fs.StringVar(&o.ControllerLogLevel, "controller-log-level", o.ControllerLogLevel, "wfguard's --log-level (debug, info, warn, error); info and debug log more, which costs the measured CPU")
	fs.IntVar(&o.LatencyChains, "latency-chains", o.LatencyChains, "scheduling latency: chain workflows, run one at a time")
	fs.IntVar(&o.ChainLength, "chain-length", o.ChainLength, "scheduling latency: pods per chain")
	fs.IntVar(&o.LatencyFanOuts, "latency-fanouts", o.LatencyFanOuts, "scheduling latency: fan-out workflows, run one at a time")
	fs.IntVar(&o.FanOutWidth, "fanout-width", o.FanOutWidth, "scheduling latency: children per fan-out")
	fs.IntVar(&o.ThroughputWorkflows, "workflows", o.ThroughputWorkflows, "throughput: concurrent workflows")
	fs.IntVar(&o.ThroughputNodes, "nodes", o.ThroughputNodes, "throughput: pods per workflow (a chain)")
	fs.IntVar(&o.ThroughputRounds, "throughput-rounds", o.ThroughputRounds, "throughput: rounds; each runs every controller and both raw clients once, in an order rotated each round (0: one round per subject, so each runs once in every position)")
	fs.IntVar(&o.HostileWorkflows, "hostile-workflows", o.HostileWorkflows, "hostile: ordinary workflows (chains of --nodes pods), run alone and beside the recursion bombs")
	fs.IntVar(&o.HostileBombs, "hostile-bombs", o.HostileBombs, "hostile: recursion bombs (steps and DAG in turn) submitted with the ordinary workflows, interleaved")
	fs.IntVar(&o.HostileRounds, "hostile-rounds", o.HostileRounds, "hostile: rounds, each running the ordinary workflows alone and beside the bombs, alternating which runs first")
	fs.IntVar(&o.Actions, "actions", o.Actions, "WorkflowAction latency: concurrent actions of each kind")
	fs.IntVar(&o.OrphanPods, "orphans", o.OrphanPods, "orphan sweep: orphaned pods holding the status finalizer")
	fs.IntVar(&o.OrphanRounds, "orphan-rounds", o.OrphanRounds, "orphan sweep: rounds, alternating whether the controller or the raw loop runs first; the median round's ratio is the figure")
	fs.IntVar(&o.LateResultWorkflows, "late-workflows", o.LateResultWorkflows, "late results: concurrent workflows")
	fs.DurationVar(&o.LateResultDelay, "late-delay", o.LateResultDelay, "late results: delay of the controller's task-result watch events")
	fs.IntVar(&o.ScaleWorkflows, "scale-workflows", o.ScaleWorkflows, "scale: concurrent workflows, run to completion at once")
	fs.IntVar(&o.ScalePodsPerWorkflow, "scale-pods-per-workflow", o.ScalePodsPerWorkflow, "scale: pods per workflow (a diamond: root → n-2 in parallel → sink)")
	fs.IntVar(&o.MemoryWorkflows, "memory-workflows", o.MemoryWorkflows, "memory: completed workflows cached")
	fs.IntVar(&o.MemoryPodsPerWorkflow, "memory-pods-per-workflow", o.MemoryPodsPerWorkflow, "memory: finished pods (Succeeded, released, labelled completed) per completed workflow")
	fs.StringVar(&o.ControllerBinary, "controller-binary", "bin/wfguard", "wfguard binary run as the controller under test")
	fs.StringVar(&inv.only, "only", "", "comma-separated scenarios to run: latency,throughput,hostile,actions,orphans,lateresults,scale,memory (default all)")
	fs.StringVar(&inv.out, "out", "bench/results", "directory for <date>.json (\"\" writes none)")
	fs.StringVar(&o.LogDir, "logs", "", "keep the controllers' logs and kubeconfigs, and the simulated node's log (simnode.log), in this directory, with wfguard's CPU and heap profiles and /metrics of the throughput scenario, the API server's CPU profile and its /metrics before and after every throughput run (the API server then starts with --profiling), wfguard's /metrics before and after the actions scenario's bursts, and its heap after the scale scenario (default: a temp dir removed at the end)")
	fs.StringVar(&inv.cpuProfile, "cpuprofile", "", "write a CPU profile of the bench process (observer, API proxies, simulated node and raw client; not the controllers) to this file")
}

// readLists reads --only and --controllers into the options, refusing a name the bench does not know.
func (inv *invocation) readLists() error {
	if inv.only != "" {
		inv.opts.Only = strings.Split(inv.only, ",")
		for _, s := range inv.opts.Only {
			if !bench.IsScenario(s) {
				return fmt.Errorf("unknown scenario %q in --only", s)
			}
		}
	}
	inv.opts.Controllers = nil
	for _, c := range strings.Split(inv.controllers, ",") {
		if !bench.IsController(c) {
			return fmt.Errorf("unknown controller %q in --controllers (want %s)", c, strings.Join(bench.Controllers, ","))
		}
		inv.opts.Controllers = append(inv.opts.Controllers, c)
	}
	return nil
}

// startCPUProfile profiles the bench process into path; the returned func stops and writes the profile.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeReport prints the report and, unless out is "", saves it as JSON there; it returns the exit code.
func writeReport(report *bench.Report, out string, begin time.Time, stdout, stderr io.Writer) int {
	report.WriteText(stdout)
	fmt.Fprintf(stdout, "\nbench finished in %s\n", time.Since(begin).Round(time.Second))
	if out == "" {
		return 0
	}
	path, err := saveJSON(report, out)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report written to %s\n", path)
	return 0
}

// saveJSON writes the report as <date>.json in dir, which it creates if need be, and returns the file's path.
func saveJSON(report *bench.Report, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, report.Date.Format("2006-01-02T150405Z")+".json")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	werr := report.WriteJSON(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("writing %s: %w", path, werr)
	}
	return path, nil
}
