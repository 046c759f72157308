package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	argoconfig "github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/actions"
	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/admissionpolicy"
	"github.com/wfguard/wfguard/argometrics"
	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/passdemand"
	"github.com/wfguard/wfguard/controller/promptqueue"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/custommetrics"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/internal/reportonce"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/podgc"
	"github.com/wfguard/wfguard/podidentity"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/retention"
	"github.com/wfguard/wfguard/retrycleanup"
	"github.com/wfguard/wfguard/synchronization"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/throttle"
)

// Options configure a Controller. Zero values give the defaults.
type Options struct {
	// Namespace limits the controller to one namespace (--namespaced / --managed-namespace); "" is all.
	Namespace string
	// InstanceID selects only objects labelled with it (--instanceid); "" selects unlabelled ones.
	InstanceID    string
	Workers       int
	ExecutorImage string
	// StatusFinalizer adds workflows.argoproj.io/status to new pods.
	StatusFinalizer bool
	// TaskResultTimeout bounds a node's wait for its task result after its pod ended (default 2m);
	// a workflow's wfguard.io/task-result-timeout annotation overrides it.
	TaskResultTimeout time.Duration
	// OldPodWait bounds how long a node waits for a pod of its name left by a deleted workflow of the same
	// name to go (default engine.DefaultOldPodWait).
	OldPodWait time.Duration
	// RetryCleanupTimeout bounds how long a retried workflow waits for the previous run's pods and task
	// results of its removed nodes to be deleted before it ends Error (default DefaultRetryCleanupTimeout).
	RetryCleanupTimeout time.Duration
	// DirectReadBudget caps task-result reads past the cache per workflow pass (default 20).
	DirectReadBudget int
	// ActionTTL is how long a terminal WorkflowAction is kept after its completion (default 24h).
	ActionTTL time.Duration
	// ActionGCInterval is how often expired actions are looked for (default 1m).
	ActionGCInterval time.Duration
	// OrphanSweepInterval is how often pods of deleted workflows are looked for (0 disables the sweep;
	// pod events and start-up still find them).
	OrphanSweepInterval time.Duration
	// StatusCoalesceWindow lets a pass that changed only informational node fields (host, exit code, outputs
	// before the node completes, Pending→Running) wait so later changes share its write: this long for a
	// node going Running, five times as long for the other fields; decisions (new nodes, phases reached,
	// messages, actions) are always written at once. 0 writes every pass.
	StatusCoalesceWindow time.Duration
	// MaxWorkflowSize is the encoded size in bytes above which a workflow's nodes are stored compressed
	// (status.compressedNodes) and above which, even compressed, the workflow is ended Error instead
	// (default extstatus.DefaultMaxWorkflowSize, 1 MiB as argo's MAX_WORKFLOW_SIZE).
	MaxWorkflowSize int
	// ResyncPeriod re-lists the caches; 0 disables resync.
	ResyncPeriod time.Duration
	// Validate checks a new workflow's spec (argo's validation in the binary); nil accepts every spec.
	Validate func(*wfv1.Workflow) error
	// Config is argo's controller ConfigMap in force (controllerconfig.Watcher); nil is an empty config.
	// A Source that also has OnChange(func(*argoconfig.Config)) makes a raised parallelism take effect at once.
	Config   controllerconfig.Source
	Clock    clock.WithTicker
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Recorder, when set, records the controller's Events in place of a broadcaster that writes them through
	// Clients.Kube once Run starts it (tests: record.FakeRecorder).
	Recorder record.EventRecorder
	// WrapListWatch, when set, wraps the ListerWatcher of each informer by resource name ("workflows",
	// "pods", "workflowtaskresults", "workflowactions"): the seam for stale-store faults (faultinject).
	WrapListWatch func(resource string, lw cache.ListerWatcher) cache.ListerWatcher
	// WrapHandler, when set, wraps each informer's event handler by resource name: the seam for late-notify
	// faults, where the store is fresh but the handlers hear late (faultinject).
	WrapHandler func(resource string, h cache.ResourceEventHandler) cache.ResourceEventHandler
	// Points are named crash points and the worker gate (faultinject); nil passes everywhere.
	Points *faultinject.Points
	// PassDeadline bounds one reconcile pass of one key (default DefaultPassDeadline): past it the pass's
	// context is cancelled, so its API calls and fault points return, and the key is retried with backoff.
	PassDeadline time.Duration
	// RecordKey seals what the controller records in objects other identities may write too (the
	// write-ahead action records) and tells its own records from forged ones; nil records unsealed and
	// trusts every record (--record-key-secret="").
	RecordKey *provenance.Key
	// RecordKeySecret is the Secret the record key was read from: no workflow pod of its namespace may read it.
	RecordKeySecret types.NamespacedName
	// MemoizeTrust says which memoization cache entries decide a node's outputs (--memoize-trust): "" and
	// memoize.TrustAny every entry, as argo; memoize.TrustSealed only those the controller saved, which
	// needs RecordKey. Entries are sealed whenever RecordKey is set.
	MemoizeTrust memoize.Trust
	// Hooks observe the pipeline, for tests that check its guarantees.
	Hooks Hooks
	// ArgoMetrics, when set, hears what argo's own metric names report (argometrics); nil reports nothing.
	ArgoMetrics ArgoMetrics
	// Inflate bounds reading status.compressedNodes (zero fields: extstatus's defaults): one Inflater for every
	// decoding of the controller, so its budget is the process's. Observe is the controller's metrics; Clock
	// defaults to Clock.
	Inflate extstatus.InflaterConfig
}

// Hooks are called around each reconcile of a key.
type Hooks struct {
	ReconcileStart func(key string)
	ReconcileEnd   func(key string)
	// BeforePersist runs just before the Update of a pass (tests inject conflicting writes here).
	BeforePersist func(key string)
	// BeforeActionStatus runs after a persist that recorded actions, before their statuses are written;
	// returning false skips the writes, as a crash at that point would (the crash-point seam).
	BeforeActionStatus func(key string) bool
	// AfterActionGC runs after each pass of the expired-action GC.
	AfterActionGC func()
}

// Controller reconciles workflows through one serialized per-key pipeline.
type Controller struct {
	opts  Options
	log   *slog.Logger
	clock clock.WithTicker
	kube  kubernetes.Interface
	// workflowsREST is the dynamic client's REST client, which decodes the API server's errors as it does.
	workflowsREST rest.Interface
	argo          versioned.Interface
	dynamic       dynamic.Interface
	actions       *actionsv1.Client
	drainer       *actions.Drainer   // the action seam of each pass
	actionGC      *actions.Collector // deletes expired actions
	queue         workqueue.TypedRateLimitingInterface[string]
	inf           *informerSet
	engine        *engine.Engine
	locks         *synchronization.Manager
	throttle      *throttle.Throttle   // parallelism / namespaceParallelism of the controller config
	retain        *retention.Collector // retentionPolicy of the controller config
	releaser      *podfinalizer.Releaser
	retryCleanup  *retrycleanup.Cleaner
	results       *taskresult.Observer
	resultRemover *taskresult.Remover // deletes completed workflows' results and nodes' stale ones
	podgc         *podgc.Collector
	custom        *custommetrics.Registry // the workflows' own metrics (spec.metrics, templates' metrics)
	recorder      record.EventRecorder
	events        record.EventBroadcaster // nil when Options.Recorder records the Events
	metrics       *metrics

	ready   atomic.Bool
	started atomic.Bool
	// crash ends Run as a dying process would, when a crash point fires; crashed stops every worker.
	crash   context.CancelCauseFunc
	crashed atomic.Bool

	// reported remembers ignored pods already warned about.
	reported reportonce.Keys

	// written remembers our last write per workflow UID (the stale-cache guard and its write-through copy).
	writtenMu sync.Mutex
	written   map[types.UID]lastWrite
	// staleWaiters are keys whose last pass skipped a stale copy: our write's echo must reconcile them.
	staleWaiters map[string]struct{}
	// inFlight holds, per UID with a write on the wire, the resourceVersions of the workflow's update events
	// that arrived meanwhile (storeWorkflow).
	inFlight map[types.UID][]string

	// deferred holds when each key's coalescing window opened: its first not-yet-written informational event
	// or, failing one, pass (StatusCoalesceWindow).
	deferredMu sync.Mutex
	deferred   map[string]time.Time

	// demand records what asks for each key's next pass: a queued key with neither runs none.
	demand passdemand.Ledger

	decodes decodeCache // each running workflow's cache copy, decoded once per resourceVersion
	// completed keeps the decodings of completed workflows whose nodes are compressed.
	completed completedDecodes
	// inflater reads every status.compressedNodes of the controller.
	inflater *extstatus.Inflater
	// refusals remembers the workflow versions whose refused nodes were reported.
	refusals reportonce.Keys
}

var workflowsResource = wfv1.SchemeGroupVersion.WithResource("workflows")

// New builds a Controller acting through clients (NewClients builds them from a rest.Config); Run starts it.
func New(clients Clients, opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	if err := clients.check(); err != nil {
		return nil, err
	}
	if err := opts.checkMemoizeTrust(); err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, log: opts.Logger, clock: opts.Clock, written: map[types.UID]lastWrite{},
		deferred: map[string]time.Time{}, staleWaiters: map[string]struct{}{},
		kube: clients.Kube, argo: clients.Argo, dynamic: clients.Dynamic, workflowsREST: clients.WorkflowsREST, actions: clients.Actions}
	// In order: the informers need the queue, the pod and action parts the informers and the recorder, the
	// engine all of them.
	for _, build := range []func() error{
		c.buildMetrics,
		c.buildDecoding,
		c.buildQueue,
		c.buildInformers,
		c.buildRecorder,
		c.buildPodParts,
		c.buildActionParts,
		c.buildEngine,
	} {
		if err := build(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// withDefaults fills every option left unset.
func (opts Options) withDefaults() Options {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.TaskResultTimeout <= 0 {
		opts.TaskResultTimeout = taskresult.DefaultTimeout
	}
	if opts.ActionTTL <= 0 {
		opts.ActionTTL = 24 * time.Hour
	}
	if opts.RetryCleanupTimeout <= 0 {
		opts.RetryCleanupTimeout = DefaultRetryCleanupTimeout
	}
	if opts.ActionGCInterval <= 0 {
		opts.ActionGCInterval = time.Minute
	}
	if opts.PassDeadline <= 0 {
		opts.PassDeadline = DefaultPassDeadline
	}
	if opts.MaxWorkflowSize <= 0 {
		opts.MaxWorkflowSize = extstatus.DefaultMaxWorkflowSize
	}
	if opts.DirectReadBudget <= 0 {
		opts.DirectReadBudget = taskresult.DefaultDirectReadBudget
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.MemoizeTrust == "" {
		opts.MemoizeTrust = memoize.TrustAny
	}
	return opts
}

// checkMemoizeTrust refuses a trust the cache cannot honour: only a key tells the controller's entries.
func (opts Options) checkMemoizeTrust() error {
	if _, err := memoize.ParseTrust(string(opts.MemoizeTrust)); err != nil {
		return err
	}
	if opts.MemoizeTrust == memoize.TrustSealed && opts.RecordKey == nil {
		return fmt.Errorf("memoize trust %s needs the record key: without it no entry can be told to be the controller's", memoize.TrustSealed)
	}
	return nil
}

// buildMetrics registers the controller's own metrics.
func (c *Controller) buildMetrics() error {
	var err error
	if c.metrics, err = newMetrics(c.opts.Registry); err != nil {
		return fmt.Errorf("registering the controller's metrics: %w", err)
	}
	return nil
}

// buildDecoding builds the Inflater every decoding of the controller goes through, and the caches of decodings.
func (c *Controller) buildDecoding() error {
	cfg := c.opts.Inflate
	cfg.Observe = c.metrics.observeInflation
	if cfg.Clock == nil {
		cfg.Clock = c.clock
	}
	c.inflater = extstatus.NewInflater(cfg)
	c.decodes.inflater = c.inflater
	c.completed.inflater = c.inflater
	return nil
}

// buildQueue builds the workflow queue. Per-item exponential backoff is for errors only; events use Add,
// which coalesces without delay. Under load, keys added for a change (a pod ended, an action arrived) go to
// a worker before delayed requeues (coalesced progress writes, echoes, retries): a successor's pod never
// waits behind a progress write.
func (c *Controller) buildQueue() error {
	queueMetrics, err := promptqueue.NewMetrics(c.opts.Registry)
	if err != nil {
		return fmt.Errorf("registering the queue's metrics: %w", err)
	}
	c.queue = promptqueue.New(promptqueue.Config{Name: argometrics.WorkflowQueue, Clock: c.opts.Clock, Metrics: queueMetrics,
		MetricsProvider: argoQueueMetrics(c.opts.ArgoMetrics),
		RateLimiter:     workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second)})
	return nil
}

// buildInformers builds the informers and the gauge of the pods they cache.
func (c *Controller) buildInformers() error {
	var err error
	if c.inf, err = c.newInformers(); err != nil {
		return err
	}
	if err := registerCachedPods(c.opts.Registry, c.inf.pods.GetStore()); err != nil {
		return fmt.Errorf("registering the cached pods gauge: %w", err)
	}
	return nil
}

// buildRecorder builds the event broadcaster and the recorder every part writes its events with.
func (c *Controller) buildRecorder() error {
	if c.opts.Recorder != nil {
		c.recorder = c.opts.Recorder
		return nil
	}
	c.events = record.NewBroadcaster(record.WithContext(context.Background()))
	eventScheme := runtime.NewScheme()
	if err := errors.Join(scheme.AddToScheme(eventScheme), wfv1.AddToScheme(eventScheme), actionsv1.AddToScheme(eventScheme)); err != nil {
		return fmt.Errorf("building the event scheme: %w", err)
	}
	c.recorder = c.events.NewRecorder(eventScheme, corev1.EventSource{Component: "wfguard-controller"})
	return nil
}

// buildPodParts builds what acts on pods outside the engine: the finalizer releaser, the pod collector and
// a Retry's cleanup.
func (c *Controller) buildPodParts() error {
	var err error
	c.releaser, err = podfinalizer.NewReleaser(podfinalizer.Config{
		Kube:              c.kube,
		Pods:              c.inf.pods.GetIndexer(),
		PodsByWorkflowKey: IndexWorkflowKey,
		PodsByWorkflowUID: IndexWorkflowUID,
		Workflows:         c.inf.workflows.GetIndexer(),
		WorkflowsByUID:    IndexWorkflowUID,
		Ours:              func(owner podidentity.Owner, pod *corev1.Pod) bool { return c.ours(owner, nil, pod) },
		Enqueue:           func(pod *corev1.Pod) { c.enqueueOwner(pod) },
		StatusFinalizer:   c.opts.StatusFinalizer,
		SweepInterval:     c.opts.OrphanSweepInterval,
		Points:            c.opts.Points,
		Clock:             c.clock,
		Log:               c.log,
		Recorder:          c.recorder,
		Registry:          c.opts.Registry,
	})
	if err != nil {
		return fmt.Errorf("building the pod finalizer releaser: %w", err)
	}
	if c.podgc, err = podgc.NewCollector(c.kube, c.clock, c.opts.Registry); err != nil {
		return fmt.Errorf("building the pod collector: %w", err)
	}
	c.podgc.Settings = func() podgc.Settings { return podGCSettings(controllerconfig.CurrentOf(c.opts.Config)) }
	c.retryCleanup = retrycleanup.New(retrycleanup.Config{Kube: c.kube, Argo: c.argo,
		Pods: c.inf.pods.GetIndexer(), PodsByWorkflowUID: IndexWorkflowUID, Results: c.inf.results.GetIndexer(), ResultsByWorkflowKey: IndexWorkflowKey,
		Timeout: c.opts.RetryCleanupTimeout, Points: c.opts.Points, Log: c.log})
	return nil
}

// buildActionParts builds the WorkflowAction drainer and the collector of finished actions.
func (c *Controller) buildActionParts() error {
	actionMetrics, err := actions.NewMetrics(c.opts.Registry)
	if err != nil {
		return fmt.Errorf("registering the action metrics: %w", err)
	}
	c.drainer = &actions.Drainer{
		Client:       c.actions,
		Actions:      c.inf.actions.GetIndexer(),
		Workflows:    c.dynamic.Resource(workflowsResource),
		FieldManager: updateOptions.FieldManager,
		Clock:        c.clock,
		Log:          c.log,
		Metrics:      actionMetrics,
		Recorder:     c.recorder,
		Key:          c.opts.RecordKey,
		Points:       c.opts.Points,
		BeforeStatus: c.opts.Hooks.BeforeActionStatus,
		RetryPolicy:  c.readRetryPolicy,
	}
	c.actionGC = &actions.Collector{
		Client:    c.actions,
		Actions:   c.inf.actions.GetStore(),
		Clock:     c.clock,
		TTL:       c.opts.ActionTTL,
		Interval:  c.opts.ActionGCInterval,
		Log:       c.log,
		Metrics:   actionMetrics,
		AfterPass: c.opts.Hooks.AfterActionGC,
		Ours:      c.actionIsOurs,
	}
	return nil
}

// buildEngine builds the workflow engine and what its passes use beside it (custom metrics, the task-result
// observer, locks, the parallelism throttle), and retention, which the config's changes trigger with the
// throttle.
func (c *Controller) buildEngine() error {
	opts := c.opts
	var err error
	if c.custom, err = custommetrics.NewRegistry(opts.Registry, c.clock.Now); err != nil {
		return err
	}
	if opts.ArgoMetrics != nil {
		c.custom.Reserve(argometrics.ExposedNames()...)
	}
	resultMetrics, err := taskresult.NewMetrics(opts.Registry)
	if err != nil {
		return fmt.Errorf("registering the task-result metrics: %w", err)
	}
	memoMetrics, err := memoize.NewMetrics(opts.Registry)
	if err != nil {
		return err
	}
	c.results = &taskresult.Observer{Client: c.argo, Budget: opts.DirectReadBudget, Recorder: c.recorder, Log: c.log, Metrics: resultMetrics}
	c.resultRemover = &taskresult.Remover{Client: c.argo, InstanceSelector: c.instanceSelector()}
	// A released lock wakes the workflows next in line for it.
	c.locks = synchronization.NewManager(c.changed)
	c.throttle = throttle.New(func() (int, int) {
		cfg := controllerconfig.CurrentOf(opts.Config)
		return cfg.Parallelism, cfg.NamespaceParallelism
	}, c.changed)
	if c.retain, err = c.newRetention(); err != nil {
		return err
	}
	if notifier, ok := opts.Config.(configNotifier); ok {
		notifier.OnChange(func(*argoconfig.Config) {
			c.throttle.Refill()
			c.retain.Trigger()
		})
	}
	c.engine = &engine.Engine{
		Locks:               c.locks,
		Pods:                &podControl{kube: c.kube, metrics: c.metrics},
		Results:             c.resultRemover,
		PVCs:                pvcControl{kube: c.kube},
		PDBs:                pdbControl{kube: c.kube},
		Templates:           templateSource{argo: c.argo},
		ServiceAccounts:     serviceAccountSource{kube: c.kube},
		ConfigMaps:          configMapSource{kube: c.kube, defaults: c.inf.artifactRepos.GetIndexer()},
		Caches:              memoize.KubeConfigMaps{Kube: c.kube, FieldManager: updateOptions.FieldManager},
		MemoProvenance:      memoize.Provenance{Key: opts.RecordKey, Trust: opts.MemoizeTrust},
		MemoMetrics:         memoMetrics,
		ParameterConfigMaps: c.inf.configMaps.GetIndexer(),
		Metrics:             c.custom,
		Validate:            opts.Validate,
		Config:              opts.Config,
		Admission:           c.throttle,
		ExecutorImage:       opts.ExecutorImage,
		InstanceID:          opts.InstanceID,
		StatusFinalizer:     opts.StatusFinalizer,
		OldPodWait:          opts.OldPodWait,
		Estimates:           clientstatus.NewEstimates(c.newestSucceeded),
		RecordKey:           opts.RecordKey,
		RecordKeySecret:     opts.RecordKeySecret,
	}
	return nil
}

// readRetryPolicy reads the admission policy a Retry that rewrites its workflow needs (actions.RetryPolicy).
func (c *Controller) readRetryPolicy(ctx context.Context) (admissionpolicy.Verdict, error) {
	return admissionpolicy.Read(ctx, c.kube, actions.RetryOverridesPolicy)
}

// logRetryPolicy says at start whether Retries that rewrite their workflow can be applied. Each such Retry
// reads the policy again when applied: this is only for the operator.
func (c *Controller) logRetryPolicy(ctx context.Context) {
	v, err := c.readRetryPolicy(ctx)
	switch {
	case err != nil:
		c.log.Warn("could not read the admission policy that Retries with parameters, restartSuccessful or a nodeFieldSelector need", "policy", actions.RetryOverridesPolicy, "err", err)
	case v.NotInForce != "":
		c.log.Warn("Retries with parameters, restartSuccessful or a nodeFieldSelector will be refused until config/policy is installed", "policy", actions.RetryOverridesPolicy, "why", v.NotInForce)
	}
}

// CheckWorkflowCRD refuses to run against a Workflow CRD whose schema would prune wfguard's status fields.
func CheckWorkflowCRD(ctx context.Context, client dynamic.Interface) error {
	crd, err := installedCRD(ctx, client, "workflows.argoproj.io")
	if err != nil {
		return err
	}
	return extstatus.CheckCRDPreserves(crd)
}

// installedCRD reads a CRD, saying how to install it when it is missing.
func installedCRD(ctx context.Context, client dynamic.Interface, name string) (*unstructured.Unstructured, error) {
	crd, err := client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the %s CRD is not installed: kubectl apply -k config/crd", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s CRD: %w", name, err)
	}
	return crd, nil
}

// Run serves until ctx ends, then drains: in-flight reconciles finish and their writes complete.
func (c *Controller) Run(ctx context.Context) error {
	c.started.Store(true)
	if err := CheckWorkflowCRD(ctx, c.dynamic); err != nil {
		return err
	}
	if _, err := installedCRD(ctx, c.dynamic, "workflowactions.argoproj.io"); err != nil {
		return err
	}
	c.logRetryPolicy(ctx)
	ctx, c.crash = context.WithCancelCause(ctx)
	defer c.recordEvents()()
	stop := make(chan struct{})
	c.inf.start(stop)
	defer c.inf.shutdown()
	defer close(stop)
	if !cache.WaitForCacheSync(ctx.Done(), c.inf.synced()...) {
		c.queue.ShutDown()
		return fmt.Errorf("waiting for informer caches to sync: %w", ctx.Err())
	}
	c.restoreLocks()
	c.ready.Store(true)
	defer c.ready.Store(false)
	c.log.Info("caches synced; starting workers", "workers", c.opts.Workers, "namespace", c.opts.Namespace)
	var wg sync.WaitGroup
	c.startLoops(ctx, &wg)
	c.startWorkers(ctx, &wg)
	<-ctx.Done()
	return c.drain(ctx, &wg)
}

// startLoops starts the loops that run beside the workers: the orphan sweep, the action GC and retention.
func (c *Controller) startLoops(ctx context.Context, wg *sync.WaitGroup) {
	for _, loop := range []func(context.Context){c.releaser.Sweep, c.actionGC.Run, c.retain.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
}

// startWorkers starts the workers that reconcile keys until the queue shuts down.
func (c *Controller) startWorkers(ctx context.Context, wg *sync.WaitGroup) {
	for range c.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// The worker gate: a paused point holds every worker (until resumed or shutdown).
				if err := c.opts.Points.Hit(ctx, faultinject.PointWorker); errors.Is(err, faultinject.ErrCrash) {
					c.crashed.Store(true)
					c.crash(err)
				}
				if !c.processNext(context.WithoutCancel(ctx)) {
					return
				}
			}
		}()
	}
}

// drain waits, once ctx ended, for the workers' passes in flight and the loops to end; a crashed process
// drops its queue instead.
func (c *Controller) drain(ctx context.Context, wg *sync.WaitGroup) error {
	c.log.Info("shutting down: draining workers")
	if errors.Is(context.Cause(ctx), faultinject.ErrCrash) {
		c.queue.ShutDown() // a dying process does not drain its queue
	} else {
		c.queue.ShutDownWithDrain()
	}
	wg.Wait()
	// ShutDownWithDrain leaves the delaying queue's timer loop running; ShutDown ends it.
	c.queue.ShutDown()
	if cause := context.Cause(ctx); errors.Is(cause, faultinject.ErrCrash) {
		c.log.Warn("controller crashed at an injected crash point")
		return cause
	}
	c.log.Info("controller stopped")
	return nil
}

// recordEvents starts writing the controller's Events through the kube client, unless Options.Recorder
// records them; the func it returns stops it.
func (c *Controller) recordEvents() (stop func()) {
	if c.events == nil {
		return func() {}
	}
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	return c.events.Shutdown
}

// Started reports whether Run was called.
func (c *Controller) Started() bool { return c.started.Load() }

// Ready reports whether the controller is serving (caches synced, workers running).
func (c *Controller) Ready() bool { return c.ready.Load() }

// processNext reconciles one key; the workqueue never hands a key to two workers at once.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if c.crashed.Load() {
		return false // a shut-down queue still hands out what it holds; a dead process takes nothing
	}
	if !c.admit(key) {
		return true
	}
	if am := c.opts.ArgoMetrics; am != nil {
		am.WorkerBusy(argometrics.WorkflowQueue)
		defer am.WorkerFree(argometrics.WorkflowQueue)
	}
	if h := c.opts.Hooks.ReconcileStart; h != nil {
		h(key)
	}
	start := c.clock.Now()
	requeueAfter, panicked, err := c.guardedReconcile(ctx, key)
	if panicked == nil && errors.Is(err, faultinject.ErrCrash) {
		// Nothing more happens in a dead process: no other pass may start, this key's included.
		c.crashed.Store(true)
		c.crash(err)
		c.queue.ShutDown()
		return false
	}
	if h := c.opts.Hooks.ReconcileEnd; h != nil {
		h(key)
	}
	if panicked != nil {
		c.afterPanic(ctx, key, panicked)
		return true
	}
	c.metrics.reconcileDuration.Observe(c.clock.Since(start).Seconds())
	if am := c.opts.ArgoMetrics; am != nil {
		am.OperationDone(c.clock.Since(start))
	}
	c.settle(key, requeueAfter, err)
	return true
}

// afterPanic retries a key whose pass panicked, unless its workflow records the panic: that write's echo
// brings the key back.
func (c *Controller) afterPanic(ctx context.Context, key string, pv *panicked) {
	if c.handlePanic(ctx, key, pv) {
		c.queue.Forget(key)
	} else {
		c.retry(key)
	}
}

// settle counts a pass by its result and queues its key again: with backoff after a failure, when the
// pass asked after a success.
func (c *Controller) settle(key string, requeueAfter time.Duration, err error) {
	switch {
	case errors.Is(err, errPassDeadline):
		c.metrics.reconciles.WithLabelValues(resultDeadline).Inc()
		c.log.Error("reconcile exceeded its deadline; abandoned and retrying with backoff", "workflow", key,
			"deadline", c.opts.PassDeadline, "passPhase", failedPhase(err), "err", err)
		c.reportDeadline(key)
		c.retry(key)
	case err != nil:
		c.metrics.reconciles.WithLabelValues(resultError).Inc()
		c.log.Error("reconcile failed; retrying with backoff", "workflow", key, "passPhase", failedPhase(err), "err", err)
		c.retry(key)
	default:
		c.metrics.reconciles.WithLabelValues(resultSuccess).Inc()
		c.queue.Forget(key)
		if requeueAfter > 0 {
			c.demand.Requested(key, c.clock.Now().Add(requeueAfter))
			c.queue.AddAfter(key, requeueAfter)
		}
	}
}

// admit decides whether key, just handed out, runs a pass (passdemand). A delayed entry whose change a
// later pass already saw runs none; one that came before the time a pass asked for is queued again for the
// rest of it, since the queue kept only the earlier of the two delays.
func (c *Controller) admit(key string) bool {
	run, wait := c.demand.Begin(key, c.clock.Now())
	if run {
		return true
	}
	c.metrics.passesSkipped.Inc()
	if wait > 0 {
		c.queue.AddAfter(key, wait)
	}
	return false
}

// retry queues key again with backoff; its pass runs whenever the backoff ends.
func (c *Controller) retry(key string) {
	c.demand.Requested(key, c.clock.Now())
	c.queue.AddRateLimited(key)
}

// restoreLocks rebuilds the lock table from the running workflows' status.synchronization before any
// worker runs, so a holder keeps its lock across a restart and no waiter takes it meanwhile.
func (c *Controller) restoreLocks() {
	for _, obj := range c.inf.workflows.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetLabels()[common.LabelKeyCompleted] == "true" {
			continue
		}
		wf, _, err := c.inflater.FromUnstructured(u)
		if err != nil {
			continue // the undecodable-workflow path fails it
		}
		c.locks.Restore(wf)
		if wf.Status.Phase == wfv1.WorkflowRunning {
			c.throttle.Running(wf.Namespace, wf.Name) // a running workflow holds its parallelism slot
		}
	}
}
