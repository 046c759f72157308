package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	argoconfig "github.com/argoproj/argo-workflows/v3/config"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/argometrics"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/cmdlog"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/taskresult"
)

type controllerFlags struct {
	kubeconfig         string
	namespaced         bool
	managedNamespace   string
	workers            int
	cronWorkers        int
	qps                float64
	coalesceWindow     time.Duration
	passDeadline       time.Duration
	maxWorkflowSize    int
	burst              int
	kubeContentType    string
	executorImage      string
	instanceID         string
	configMap          string
	recordKeySecret    string
	memoizeTrust       string
	controllerNS       string
	leaderElect        bool
	leaderElectionNS   string
	leaderElectionID   string
	metricsPort        int
	healthPort         int
	profiling          bool
	podStatusFinalizer bool
	taskResultTimeout  time.Duration
	orphanSweep        time.Duration
	actionTTL          time.Duration
	logFormat          string
	logLevel           string
	faultFlags
}

func parseControllerFlags(args []string, stderr io.Writer) (*controllerFlags, error) {
	f := &controllerFlags{}
	fs := flag.NewFlagSet("wfguard controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.controllerNS = envOr("NAMESPACE", "argo")
	if err := f.validate(fs.Args()); err != nil {
		return nil, err
	}
	return f, nil
}

// register defines the controller's flags; -h lists them sorted by name, whatever the order here.
func (f *controllerFlags) register(fs *flag.FlagSet) {
	f.registerAPIClientFlags(fs)
	f.registerScopeFlags(fs)
	f.registerWorkerFlags(fs)
	f.registerStatusWriteFlags(fs)
	f.registerPodFlags(fs)
	f.registerRecordFlags(fs)
	f.registerLeaderElectionFlags(fs)
	f.registerServingFlags(fs)
	f.registerTaskResultAndTimeoutFlags(fs)
	registerFaultFlags(fs, &f.faultFlags)
	f.registerLogFlags(fs)
}

func (f *controllerFlags) registerAPIClientFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig; empty uses the in-cluster config")
	fs.Float64Var(&f.qps, "qps", 20, "API client queries per second")
	fs.IntVar(&f.burst, "burst", 30, "API client burst")
	fs.StringVar(&f.kubeContentType, "kube-api-content-type", runtime.ContentTypeProtobuf,
		"content type of requests for Kubernetes' own kinds (pods, events, ConfigMaps...): "+runtime.ContentTypeProtobuf+" or "+runtime.ContentTypeJSON+" (argo's custom resources are always JSON)")
}

// registerScopeFlags: the ConfigMap is here as its instanceID also says which workflows are this controller's.
func (f *controllerFlags) registerScopeFlags(fs *flag.FlagSet) {
	fs.BoolVar(&f.namespaced, "namespaced", false, "run namespace-scoped: watch only the controller's namespace (or --managed-namespace)")
	fs.StringVar(&f.managedNamespace, "managed-namespace", "", "the namespace to watch with --namespaced (default: the controller's own, from $NAMESPACE)")
	fs.StringVar(&f.instanceID, "instanceid", "", "only handle workflows labelled workflows.argoproj.io/controller-instanceid=<id> (overrides the ConfigMap's instanceID)")
	fs.StringVar(&f.configMap, "configmap", controllerconfig.DefaultName,
		"name of argo's controller ConfigMap, in the controller's namespace ($NAMESPACE, default argo); missing is the defaults, invalid at start stops the start")
}

func (f *controllerFlags) registerWorkerFlags(fs *flag.FlagSet) {
	fs.IntVar(&f.workers, "workflow-workers", 32, "number of workflow reconcile workers")
	fs.IntVar(&f.cronWorkers, "cron-workflow-workers", 8, "number of CronWorkflow reconcile workers (0 turns CronWorkflows off)")
	fs.DurationVar(&f.passDeadline, "pass-deadline", controller.DefaultPassDeadline,
		"how long one reconcile pass of one workflow may take before it is abandoned (its calls cancelled) and retried with backoff")
}

func (f *controllerFlags) registerStatusWriteFlags(fs *flag.FlagSet) {
	fs.DurationVar(&f.coalesceWindow, "status-coalesce-window", time.Second,
		"how long a node going Pending→Running may wait to share a later write; its other changes that decide nothing (host, exit code, outputs before completion) wait five times as long (0 writes every change at once)")
	fs.IntVar(&f.maxWorkflowSize, "max-workflow-size", envInt("MAX_WORKFLOW_SIZE", extstatus.DefaultMaxWorkflowSize),
		"encoded workflow size in bytes above which nodes are stored compressed, and above which even compressed the workflow ends Error (argo's MAX_WORKFLOW_SIZE)")
}

func (f *controllerFlags) registerPodFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.executorImage, "executor-image", "", "argoexec image for the init and wait containers (overrides the ConfigMap's executor.image; default "+podspec.DefaultExecutorImage+")")
	fs.BoolVar(&f.podStatusFinalizer, "pod-status-finalizer", true, "add the workflows.argoproj.io/status finalizer to new pods (released once the pod's node state is persisted, whatever this flag says)")
}

// registerRecordFlags: sealed memoization needs the record key, so the two are checked together.
func (f *controllerFlags) registerRecordFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.recordKeySecret, "record-key-secret", provenance.DefaultSecretName,
		"Secret in the controller's namespace ($NAMESPACE, default argo) holding the key that seals the controller's records (created when missing); \"\" records unsealed and trusts records anyone who may update a workflow can forge")
	fs.StringVar(&f.memoizeTrust, "memoize-trust", string(memoize.TrustAny),
		"which memoization cache entries decide a node's outputs: any (argo's behaviour: every entry, also one anyone who may write ConfigMaps in the namespace forged) or sealed (only entries the controller saved, sealed with the record key; others are a miss and the node runs)")
}

func (f *controllerFlags) registerLeaderElectionFlags(fs *flag.FlagSet) {
	fs.BoolVar(&f.leaderElect, "leader-elect", os.Getenv("LEADER_ELECTION_DISABLE") != "true", "elect a leader with a Lease (LEADER_ELECTION_DISABLE=true turns it off)")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", envOr("NAMESPACE", "argo"), "namespace of the leader-election Lease")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", "", "name of the Lease (default workflow-controller[-<instanceid>])")
}

func (f *controllerFlags) registerServingFlags(fs *flag.FlagSet) {
	fs.IntVar(&f.metricsPort, "metrics-port", 9090, "port serving /metrics (0 disables)")
	fs.IntVar(&f.healthPort, "health-port", 6060, "port serving /healthz and /readyz (0 disables)")
	fs.BoolVar(&f.profiling, "profiling", false, "serve net/http/pprof's /debug/pprof/ handlers on --metrics-port (off by default: profiles reveal internals and cost CPU while taken)")
}

func (f *controllerFlags) registerTaskResultAndTimeoutFlags(fs *flag.FlagSet) {
	fs.DurationVar(&f.taskResultTimeout, "task-result-timeout", taskresult.DefaultTimeout,
		"how long a node waits for its task result after its pod ended before it fails (annotation "+taskresult.AnnotationTimeout+" overrides per workflow)")
	fs.DurationVar(&f.orphanSweep, "orphan-sweep-interval", time.Minute,
		"how often to look for pods of deleted workflows that still hold the status finalizer (0 disables; events and start-up still find them)")
	fs.DurationVar(&f.actionTTL, "action-ttl", 24*time.Hour, "how long a finished WorkflowAction is kept after its completion")
}

func (f *controllerFlags) registerLogFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// validate refuses flags the controller cannot run with. The checks keep their order, so of several bad
// flags the same one is named.
func (f *controllerFlags) validate(extra []string) error {
	if f.configMap == "" {
		return fmt.Errorf("--configmap must name a ConfigMap")
	}
	if len(extra) > 0 {
		return fmt.Errorf("unexpected arguments %v", extra)
	}
	checks := []func() error{f.checkWorkers, f.faultFlags.check, f.checkKubeContentType, f.checkMaxWorkflowSize,
		f.checkDurations, f.checkLogFormat, f.checkMemoizeTrust}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (f *controllerFlags) checkWorkers() error {
	if f.workers < 1 {
		return fmt.Errorf("--workflow-workers must be at least 1, got %d", f.workers)
	}
	if f.cronWorkers < 0 {
		return fmt.Errorf("--cron-workflow-workers must not be negative, got %d", f.cronWorkers)
	}
	return nil
}

func (f *controllerFlags) checkKubeContentType() error {
	if f.kubeContentType != runtime.ContentTypeProtobuf && f.kubeContentType != runtime.ContentTypeJSON {
		return fmt.Errorf("--kube-api-content-type must be %s or %s, got %q", runtime.ContentTypeProtobuf, runtime.ContentTypeJSON, f.kubeContentType)
	}
	return nil
}

func (f *controllerFlags) checkMaxWorkflowSize() error {
	if f.maxWorkflowSize <= 0 {
		return fmt.Errorf("--max-workflow-size must be positive, got %d", f.maxWorkflowSize)
	}
	return nil
}

func (f *controllerFlags) checkDurations() error {
	if f.coalesceWindow < 0 {
		return fmt.Errorf("--status-coalesce-window must not be negative, got %s", f.coalesceWindow)
	}
	if f.passDeadline <= 0 {
		return fmt.Errorf("--pass-deadline must be positive, got %s", f.passDeadline)
	}
	if f.actionTTL <= 0 {
		return fmt.Errorf("--action-ttl must be positive, got %s", f.actionTTL)
	}
	if f.taskResultTimeout <= 0 {
		return fmt.Errorf("--task-result-timeout must be positive, got %s", f.taskResultTimeout)
	}
	return nil
}

func (f *controllerFlags) checkLogFormat() error {
	if f.logFormat != "json" && f.logFormat != "text" {
		return fmt.Errorf("--log-format must be json or text, got %q", f.logFormat)
	}
	return nil
}

func (f *controllerFlags) checkMemoizeTrust() error {
	trust, err := memoize.ParseTrust(f.memoizeTrust)
	if err != nil {
		return fmt.Errorf("--memoize-trust must be %s or %s, got %q", memoize.TrustAny, memoize.TrustSealed, f.memoizeTrust)
	}
	if trust == memoize.TrustSealed && f.recordKeySecret == "" {
		return fmt.Errorf("--memoize-trust=%s needs the record key: --record-key-secret must not be empty", memoize.TrustSealed)
	}
	return nil
}

// envInt is the integer in the environment variable key, else def (also when it is not a number).
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func runController(args []string, stderr io.Writer) int {
	f, err := parseControllerFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "wfguard controller: %v\n", err)
		return 2
	}
	log, err := cmdlog.New(f.logFormat, f.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard controller: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serveController(ctx, f, log); err != nil {
		log.Error("controller exited", "err", err)
		return 1
	}
	return 0
}

func restConfig(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
	var config *rest.Config
	var err error
	if kubeconfig != "" {
		config, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		config, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client config (set --kubeconfig outside a cluster): %w", err)
	}
	config.QPS, config.Burst = float32(qps), burst
	config.UserAgent = "wfguard-controller"
	return config, nil
}

func serveController(ctx context.Context, f *controllerFlags, log *slog.Logger) error {
	config, err := restConfig(f.kubeconfig, f.qps, f.burst)
	if err != nil {
		return err
	}
	namespace, err := f.watchedNamespace(log)
	if err != nil {
		return err
	}
	registry, argoMetrics, err := newMetricsRegistry()
	if err != nil {
		return err
	}
	log = slog.New(argoMetrics.CountLogs(log.Handler()))
	// Inside the fault injector's wrapper: an injected failure never reached the API server, so is not counted.
	config.Wrap(argoMetrics.RoundTripper(clock.RealClock{}))
	faults, err := startFaults(ctx, &f.faultFlags, config, registry, log, os.Exit)
	if err != nil {
		return err
	}
	defer faults.stop()
	ctx, stopConfig := context.WithCancel(ctx)
	defer stopConfig()
	ctrl, run, err := buildController(ctx, controllerParts{f: f, config: config, namespace: namespace,
		registry: registry, argoMetrics: argoMetrics, log: log, faults: faults})
	if err != nil {
		return err
	}
	servers, err := startServers(f, registry, ctrl, log)
	if err != nil {
		return err
	}
	defer shutdownServers(servers, log)
	return runAsLeader(ctx, leaderElection{config: config, f: f, log: log, ctrl: ctrl, argoMetrics: argoMetrics, run: run})
}

// watchedNamespace is the one namespace --namespaced watches; "" watches all.
func (f *controllerFlags) watchedNamespace(log *slog.Logger) (string, error) {
	if f.managedNamespace != "" && !f.namespaced {
		log.Warn("--managed-namespace has no effect without --namespaced", "managedNamespace", f.managedNamespace)
	}
	if !f.namespaced {
		return "", nil
	}
	namespace := f.managedNamespace
	if namespace == "" {
		namespace = os.Getenv("NAMESPACE")
	}
	if namespace == "" {
		return "", fmt.Errorf("--namespaced needs --managed-namespace or $NAMESPACE")
	}
	return namespace, nil
}

// newMetricsRegistry is what /metrics serves: the Go runtime's and the process's collectors beside argo's
// metrics.
func newMetricsRegistry() (*prometheus.Registry, *argometrics.Metrics, error) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	argoMetrics, err := argometrics.New(registry, buildInfo())
	if err != nil {
		return nil, nil, err
	}
	return registry, argoMetrics, nil
}

// controllerParts are what serveController made before the controller: its API client config (wrapped by
// the metrics and faults), scope, metrics and log.
type controllerParts struct {
	f           *controllerFlags
	config      *rest.Config
	namespace   string
	registry    *prometheus.Registry
	argoMetrics *argometrics.Metrics
	log         *slog.Logger
	faults      *faults
}

// buildController makes the controller and what the leader runs (withCronWorkflows'). It waits for the
// controller ConfigMap, watched until ctx ends.
func buildController(ctx context.Context, p controllerParts) (*controller.Controller, func(context.Context) error, error) {
	argo, err := versioned.NewForConfig(p.config)
	if err != nil {
		return nil, nil, fmt.Errorf("building the argo client: %w", err)
	}
	opts, err := controllerOptions(ctx, p, argo)
	if err != nil {
		return nil, nil, err
	}
	p.faults.apply(&opts)
	clients, err := controller.NewClients(p.config, p.f.kubeContentType)
	if err != nil {
		return nil, nil, err
	}
	ctrl, err := controller.New(clients, opts)
	if err != nil {
		return nil, nil, err
	}
	p.argoMetrics.CountFrom(ctrl.WorkflowPhaseCounts, ctrl.PodPhaseCounts)
	p.argoMetrics.CountConditionsFrom(ctrl.PodRunningCounts)
	run, err := withCronWorkflows(p.config, p.f, opts, argo, p.argoMetrics, ctrl.Run)
	if err != nil {
		return nil, nil, err
	}
	return ctrl, run, nil
}

// controllerOptions are the controller's options from the flags and the controller ConfigMap, which it
// watches until ctx ends. It defaults --leader-election-id, which depends on the instance ID.
func controllerOptions(ctx context.Context, p controllerParts, argo versioned.Interface) (controller.Options, error) {
	settings, err := watchControllerConfig(ctx, p.config, p.f, p.registry, p.log)
	if err != nil {
		return controller.Options{}, err
	}
	instanceID := instanceIDInForce(p.f, settings, p.log)
	p.f.defaultLeaderElectionID(instanceID)
	recordKey, err := loadRecordKey(ctx, p.config, p.f, p.log)
	if err != nil {
		return controller.Options{}, err
	}
	f := p.f
	return controller.Options{
		Namespace: p.namespace, InstanceID: instanceID, Config: settings, Workers: f.workers, ExecutorImage: f.executorImage,
		RecordKey:       recordKey,
		RecordKeySecret: types.NamespacedName{Namespace: f.controllerNS, Name: f.recordKeySecret},
		MemoizeTrust:    memoize.Trust(f.memoizeTrust),
		StatusFinalizer: f.podStatusFinalizer, ResyncPeriod: 20 * time.Minute, Validate: controller.ArgoValidator(argo),
		TaskResultTimeout: f.taskResultTimeout, OrphanSweepInterval: f.orphanSweep, ActionTTL: f.actionTTL,
		StatusCoalesceWindow: f.coalesceWindow,
		PassDeadline:         f.passDeadline,
		MaxWorkflowSize:      f.maxWorkflowSize,
		Logger:               p.log, Registry: p.registry,
		ArgoMetrics: p.argoMetrics,
	}, nil
}

// instanceIDInForce is --instanceid, else the ConfigMap's read once: the informers' selectors are built
// with it, so a later change of the ConfigMap's only warns.
func instanceIDInForce(f *controllerFlags, settings *controllerconfig.Watcher, log *slog.Logger) string {
	instanceID := f.instanceID
	if instanceID == "" {
		instanceID = settings.Current().InstanceID
	}
	settings.OnChange(func(c *argoconfig.Config) {
		if f.instanceID == "" && c.InstanceID != instanceID {
			log.Warn("the controller ConfigMap's instanceID changed; it takes effect at the next restart", "inForce", instanceID, "configured", c.InstanceID)
		}
	})
	return instanceID
}

// defaultLeaderElectionID is argo's Lease name, per instance ID, unless --leader-election-id names one.
func (f *controllerFlags) defaultLeaderElectionID(instanceID string) {
	if f.leaderElectionID != "" {
		return
	}
	f.leaderElectionID = "workflow-controller"
	if instanceID != "" {
		f.leaderElectionID += "-" + instanceID
	}
}

// loadRecordKey reads the record key from --record-key-secret in the controller's namespace, creating it
// the first time; nil with a warning when the flag is "".
func loadRecordKey(ctx context.Context, config *rest.Config, f *controllerFlags, log *slog.Logger) (*provenance.Key, error) {
	if f.recordKeySecret == "" {
		log.Warn("--record-key-secret is empty: action records and memoization cache entries are written unsealed, and records another identity forged in a workflow are trusted")
		return nil, nil
	}
	kube, err := kubernetes.NewForConfig(controller.KubeClientConfig(config, f.kubeContentType))
	if err != nil {
		return nil, fmt.Errorf("building the record key client: %w", err)
	}
	key, err := provenance.Load(ctx, kube.CoreV1().Secrets(f.controllerNS), f.recordKeySecret, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("%w (the controller needs get and create on Secret %s/%s: config/rbac; or --record-key-secret=\"\" to run without sealed records)",
			err, f.controllerNS, f.recordKeySecret)
	}
	return key, nil
}

// watchControllerConfig starts watching argo's controller ConfigMap and waits until its config is in force
// (a missing ConfigMap is the default config; read errors are retried). An invalid ConfigMap is an error:
// the defaults would drop its instanceID, and the controller would run every instance's workflows. The
// watch ends with ctx.
func watchControllerConfig(ctx context.Context, config *rest.Config, f *controllerFlags, registry prometheus.Registerer, log *slog.Logger) (*controllerconfig.Watcher, error) {
	kube, err := kubernetes.NewForConfig(controller.KubeClientConfig(config, f.kubeContentType))
	if err != nil {
		return nil, fmt.Errorf("building the controller ConfigMap client: %w", err)
	}
	w, err := controllerconfig.NewWatcher(controllerconfig.Options{Kube: kube, Namespace: f.controllerNS, Name: f.configMap, Log: log, Registry: registry})
	if err != nil {
		return nil, err
	}
	go w.Run(ctx)
	if err := w.WaitForSync(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// leaderElection is what runs while this process leads, and what the Lease and the reports of leading need.
type leaderElection struct {
	config      *rest.Config
	f           *controllerFlags
	log         *slog.Logger
	ctrl        *controller.Controller
	argoMetrics *argometrics.Metrics
	run         func(context.Context) error // the controller and what runs beside it
}

// runAsLeader runs at once when leader election is off, else while this process leads.
func runAsLeader(ctx context.Context, l leaderElection) error {
	if !l.f.leaderElect {
		l.log.Info("leader election disabled; running")
		l.argoMetrics.SetLeader(true)
		return l.run(ctx)
	}
	return runWithLeaderElection(ctx, l)
}

// runWithLeaderElection runs l.run while this process leads.
func runWithLeaderElection(ctx context.Context, l leaderElection) error {
	identity, err := leaderIdentity()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(controller.KubeClientConfig(l.config, l.f.kubeContentType))
	if err != nil {
		return fmt.Errorf("building the leader-election client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.f.leaderElectionID, Namespace: l.f.leaderElectionNS},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	// client-go starts OnStartedLeading in a goroutine and returns once the Lease is released, so the
	// controller's own end (drained workers, final writes) is awaited through ran.
	ran := make(chan error, 1)
	leaderCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaderelection.RunOrDie(leaderCtx, leaderelection.LeaderElectionConfig{
		Lock: lock, Name: l.f.leaderElectionID, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 5 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				l.log.Info("became leader", "identity", identity, "lease", l.f.leaderElectionNS+"/"+l.f.leaderElectionID)
				l.argoMetrics.SetLeader(true)
				ran <- l.run(ctx)
				cancel()
			},
			OnStoppedLeading: func() {
				l.argoMetrics.SetLeader(false)
				l.log.Info("stopped leading", "identity", identity)
			},
			OnNewLeader: func(id string) {
				if id != identity {
					l.log.Info("another controller leads; standing by", "leader", id)
				}
			},
		},
	})
	select {
	case err := <-ran:
		return err
	default:
	}
	if !l.ctrl.Started() {
		return nil // never led
	}
	return <-ran
}

// leaderIdentity names this process in the Lease: $LEADER_ELECTION_IDENTITY, else the hostname.
func leaderIdentity() (string, error) {
	if identity := os.Getenv("LEADER_ELECTION_IDENTITY"); identity != "" {
		return identity, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election needs $LEADER_ELECTION_IDENTITY or a hostname: %w", err)
	}
	return host, nil
}

func startServers(f *controllerFlags, registry *prometheus.Registry, ctrl *controller.Controller, log *slog.Logger) ([]*http.Server, error) {
	var servers []*http.Server
	serve := func(port int, mux *http.ServeMux) error {
		if port == 0 {
			return nil
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return fmt.Errorf("listening on port %d: %w", port, err)
		}
		s := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() {
			if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("http server stopped", "port", port, "err", err)
			}
		}()
		return nil
	}
	metrics := metricsMux(registry, f.profiling)
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ctrl.Ready() {
			http.Error(w, "caches not synced (or not leading)", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if f.metricsPort == f.healthPort && f.metricsPort != 0 {
		metrics.Handle("/healthz", health)
		metrics.Handle("/readyz", health)
		return servers, serve(f.metricsPort, metrics)
	}
	if err := serve(f.metricsPort, metrics); err != nil {
		return servers, err
	}
	return servers, serve(f.healthPort, health)
}

// metricsMux serves /metrics and, with profiling on, pprof's handlers; they are
// registered on this mux only, never on http.DefaultServeMux.
func metricsMux(registry *prometheus.Registry, profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func shutdownServers(servers []*http.Server, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			log.Warn("shutting down http server", "err", err)
		}
	}
}
