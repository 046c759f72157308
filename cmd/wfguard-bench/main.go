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

func run(args []string, stdout, stderr io.Writer) (code int) {
	o := bench.Defaults()
	fs := flag.NewFlagSet("wfguard-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: wfguard-bench [flags]\n\nRuns the benchmark scenarios on an embedded etcd + kube-apiserver with the simulated node,\nprints a report and writes it as JSON.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	controllers := fs.String("controllers", strings.Join(o.Controllers, ","), "comma-separated controllers to measure, each as its own process: wfguard (bin/wfguard controller), argo (stock bin/workflow-controller from make argo-tools)")
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
	only := fs.String("only", "", "comma-separated scenarios to run: latency,throughput,hostile,actions,orphans,lateresults,scale,memory (default all)")
	out := fs.String("out", "bench/results", "directory for <date>.json (\"\" writes none)")
	fs.StringVar(&o.LogDir, "logs", "", "keep the controllers' logs and kubeconfigs, and the simulated node's log (simnode.log), in this directory, with wfguard's CPU and heap profiles and /metrics of the throughput scenario, the API server's CPU profile and its /metrics before and after every throughput run (the API server then starts with --profiling), wfguard's /metrics before and after the actions scenario's bursts, and its heap after the scale scenario (default: a temp dir removed at the end)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process (observer, API proxies, simulated node and raw client; not the controllers) to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wfguard-bench: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		for _, s := range o.Only {
			if !bench.IsScenario(s) {
				fmt.Fprintf(stderr, "wfguard-bench: unknown scenario %q in --only\n", s)
				return 2
			}
		}
	}
	o.Controllers = nil
	for _, c := range strings.Split(*controllers, ",") {
		if !bench.IsController(c) {
			fmt.Fprintf(stderr, "wfguard-bench: unknown controller %q in --controllers (want %s)\n", c, strings.Join(bench.Controllers, ","))
			return 2
		}
		o.Controllers = append(o.Controllers, c)
	}
	o.Progress = stderr
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "wfguard-bench: starting the CPU profile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	begin := time.Now()
	report, runErr := bench.Run(ctx, o)
	if report == nil {
		fmt.Fprintf(stderr, "wfguard-bench: %v\n", runErr)
		return 1
	}
	// A failed scenario still leaves the others' figures: print and keep them, then exit non-zero.
	defer func() {
		if runErr != nil {
			fmt.Fprintf(stderr, "wfguard-bench: %v\n", runErr)
			code = 1
		}
	}()
	report.WriteText(stdout)
	fmt.Fprintf(stdout, "\nbench finished in %s\n", time.Since(begin).Round(time.Second))
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
			return 1
		}
		path := filepath.Join(*out, report.Date.Format("2006-01-02T150405Z")+".json")
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "wfguard-bench: %v\n", err)
			return 1
		}
		werr := report.WriteJSON(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			fmt.Fprintf(stderr, "wfguard-bench: writing %s: %v\n", path, werr)
			return 1
		}
		fmt.Fprintf(stdout, "report written to %s\n", path)
	}
	return 0
}
