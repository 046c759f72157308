package cronworkflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/internal/reportonce"
	"github.com/wfguard/wfguard/provenance"
)

// Options configure a Reconciler. Zero values give the defaults.
type Options struct {
	// Namespace limits the reconciler to one namespace; "" is all (as the workflow controller's).
	Namespace string
	// InstanceID selects CronWorkflows labelled with it; "" selects unlabelled ones (argo's rule).
	InstanceID string
	// Workers is the number of reconcile workers (default 8).
	Workers int
	// ValidateWorkflow checks the Workflow the CronWorkflow's runs would be, on every reconcile (a SpecError
	// when it fails); nil accepts all.
	ValidateWorkflow func(*wfv1.Workflow) error
	// Clock decides when schedules fire (default the real clock).
	Clock clock.WithTicker
	// Observer hears triggers, policy decisions and errors (default NopObserver).
	Observer Observer
	// ResyncPeriod re-lists the caches; 0 disables resync.
	ResyncPeriod time.Duration
	Logger       *slog.Logger
	Registry     prometheus.Registerer
	// RecordKey seals the runs the reconciler creates, so that a workflow posing as a run is told from
	// them (trust.go); nil trusts every workflow whose controller is the CronWorkflow, as argo does.
	RecordKey *provenance.Key
	// WallClock dates AnnotationSealedSince, compared with the API server's creationTimestamps (default the
	// real clock; Clock may be a fake one that schedules).
	WallClock clock.PassiveClock
	// AfterSync, when set, hears each completed reconcile with the resourceVersion of the CronWorkflow copy
	// it started from (tests wait on it instead of guessing when the cache caught up).
	AfterSync func(key, resourceVersion string)
}

// Reconciler runs CronWorkflows: one serialized reconcile per CronWorkflow key at a time.
type Reconciler struct {
	opts     Options
	log      *slog.Logger
	clock    clock.WithTicker
	argo     versioned.Interface
	kube     kubernetes.Interface
	queue    workqueue.TypedRateLimitingInterface[string]
	alarms   *alarms
	crons    cache.SharedIndexInformer
	runs     cache.SharedIndexInformer
	events   record.EventBroadcaster
	recorder record.EventRecorder
	metrics  *metrics

	trackedMu sync.Mutex
	tracked   map[string]tracking

	// written is, per key, the UID and resourceVersion of our last write of that CronWorkflow: a cache copy
	// older than it is stale and skipped (its echo brings the key back).
	writtenMu sync.Mutex
	written   map[string]lastWrite

	// created holds the UIDs of runs this process created whose pass has not reported yet.
	createdMu sync.Mutex
	created   map[types.UID]struct{}

	// ignoredRuns are the forged runs already reported.
	ignoredRuns reportonce.Keys
	// unstorable are the CronWorkflow versions whose refused write was reported.
	unstorable reportonce.Keys
}

// New builds a Reconciler; Run starts it.
func New(config *rest.Config, opts Options) (*Reconciler, error) {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Observer == nil {
		opts.Observer = NopObserver{}
	}
	if opts.WallClock == nil {
		opts.WallClock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	r := &Reconciler{opts: opts, log: opts.Logger.With("component", "cronworkflow"), clock: opts.Clock, tracked: map[string]tracking{}, written: map[string]lastWrite{},
		created: map[types.UID]struct{}{}}
	var err error
	if r.argo, err = versioned.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("building the argo client: %w", err)
	}
	if r.kube, err = kubernetes.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("building the kubernetes client: %w", err)
	}
	if r.metrics, err = newMetrics(opts.Registry); err != nil {
		return nil, err
	}
	// Retries back off on real time; schedules fire on the injected clock (alarms).
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "cronworkflows"})
	r.alarms = newAlarms(opts.Clock, r.queue.Add)
	if err := r.newInformers(); err != nil {
		return nil, err
	}
	r.events = record.NewBroadcaster(record.WithContext(context.Background()))
	eventScheme := runtime.NewScheme()
	if err := errors.Join(scheme.AddToScheme(eventScheme), wfv1.AddToScheme(eventScheme)); err != nil {
		return nil, fmt.Errorf("building the event scheme: %w", err)
	}
	r.recorder = r.events.NewRecorder(eventScheme, corev1.EventSource{Component: "wfguard-controller"})
	return r, nil
}

func stripManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// instanceSelector is argo's instance-ID label rule.
func instanceSelector(instanceID string) string {
	if instanceID == "" {
		return "!" + common.LabelKeyControllerInstanceID
	}
	return common.LabelKeyControllerInstanceID + "=" + instanceID
}

func (r *Reconciler) newInformers() error {
	selector := instanceSelector(r.opts.InstanceID)
	crons := r.argo.ArgoprojV1alpha1().CronWorkflows(r.opts.Namespace)
	r.crons = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return crons.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return crons.Watch(ctx, o)
		},
	}, &wfv1.CronWorkflow{}, r.opts.ResyncPeriod, cache.Indexers{})
	// Only runs of CronWorkflows are cached; they wake their CronWorkflow when they change.
	runSelector := common.LabelKeyCronWorkflow + "," + selector
	workflows := r.argo.ArgoprojV1alpha1().Workflows(r.opts.Namespace)
	r.runs = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = runSelector
			return workflows.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = runSelector
			return workflows.Watch(ctx, o)
		},
	}, &wfv1.Workflow{}, r.opts.ResyncPeriod, cache.Indexers{indexCron: indexByCron})
	for name, inf := range map[string]cache.SharedIndexInformer{"cronworkflows": r.crons, "workflows": r.runs} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return fmt.Errorf("setting the %s informer transform: %w", name, err)
		}
	}
	if _, err := r.crons.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueue,
		UpdateFunc: func(_, obj any) { r.enqueue(obj) },
		DeleteFunc: r.enqueue,
	}); err != nil {
		return fmt.Errorf("watching cronworkflows: %w", err)
	}
	if _, err := r.runs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueueCronOf,
		UpdateFunc: func(_, obj any) { r.enqueueCronOf(obj) },
		DeleteFunc: r.enqueueCronOf,
	}); err != nil {
		return fmt.Errorf("watching cronworkflow runs: %w", err)
	}
	return nil
}

// indexCron maps a run to "namespace/cron-name" by its controller owner reference.
const indexCron = "cron"

func indexByCron(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOfNoCopy(o); owner != nil && owner.Kind == "CronWorkflow" {
		return []string{o.GetNamespace() + "/" + owner.Name}, nil
	}
	return nil, nil
}

func (r *Reconciler) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		r.log.Error("computing cronworkflow key", "err", err)
		return
	}
	r.queue.Add(key)
}

func (r *Reconciler) enqueueCronOf(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	keys, err := indexByCron(obj)
	if err != nil {
		r.log.Error("finding the cronworkflow of a run", "err", err)
		return
	}
	for _, key := range keys {
		r.queue.Add(key)
	}
}

// Run reconciles until ctx ends, then drains the workers.
func (r *Reconciler) Run(ctx context.Context) error {
	// ShutDownWithDrain below leaves the delaying queue's timer loop running; ShutDown ends it.
	defer r.queue.ShutDown()
	defer r.events.Shutdown()
	if err := r.checkServed(ctx); err != nil {
		return err
	}
	r.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.kube.CoreV1().Events("")})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, inf := range []cache.SharedIndexInformer{r.crons, r.runs} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inf.Run(stop)
		}()
	}
	defer wg.Wait()
	defer close(stop)
	if !cache.WaitForCacheSync(ctx.Done(), r.crons.HasSynced, r.runs.HasSynced) {
		return fmt.Errorf("waiting for the cronworkflow caches to sync: %w", ctx.Err())
	}
	r.log.Info("cronworkflow caches synced; starting workers", "workers", r.opts.Workers, "namespace", r.opts.Namespace)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.alarms.run(ctx)
	}()
	var workers sync.WaitGroup
	for range r.opts.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for r.processNext(context.WithoutCancel(ctx)) {
			}
		}()
	}
	<-ctx.Done()
	r.queue.ShutDownWithDrain()
	workers.Wait()
	return nil
}

// checkServed fails clearly when the CronWorkflow CRD is not installed (the caches would never sync). Other
// errors are left to the informers, which retry.
func (r *Reconciler) checkServed(ctx context.Context) error {
	_, err := r.argo.ArgoprojV1alpha1().CronWorkflows(r.opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1,
		LabelSelector: instanceSelector(r.opts.InstanceID)})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the cronworkflows.argoproj.io CRD is not installed: kubectl apply -k config/crd (or turn CronWorkflows off with --cron-workflow-workers=0): %w", err)
	}
	if err != nil {
		r.log.Warn("listing cronworkflows at start", "err", err)
	}
	return nil
}

// NextWake is when the reconciler's schedule timer fires next on its clock (zero when none is armed): a
// test steps a fake clock past it to make the schedule fire.
func (r *Reconciler) NextWake() time.Time { return r.alarms.armedAt() }

func (r *Reconciler) processNext(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		r.log.Warn("reconciling cronworkflow; retrying", "key", key, "err", err)
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}
