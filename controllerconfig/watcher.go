package controllerconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/argoproj/argo-workflows/v3/config"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// ReasonConfigMapInvalid is the Warning Event on the ConfigMap when a version of it cannot be parsed.
const ReasonConfigMapInvalid = "ConfigMapInvalid"

// ReasonConfigMapDeleted is the Warning Event on the ConfigMap when it is deleted while the controller runs.
const ReasonConfigMapDeleted = "ConfigMapDeleted"

// Options configure a Watcher.
type Options struct {
	Kube      kubernetes.Interface
	Namespace string
	// Name of the ConfigMap; "" is DefaultName.
	Name     string
	Log      *slog.Logger
	Registry prometheus.Registerer
	// Recorder records Events on the ConfigMap; nil records through the API with a recorder of its own.
	Recorder record.EventRecorder
}

// Watcher keeps the configuration of one ConfigMap current: every valid version replaces the config in
// force, an invalid one leaves the last valid config in force, a deleted ConfigMap brings back the defaults.
// At start there is no last valid config: WaitForSync fails on an invalid ConfigMap (as argo's controller
// exits), since the defaults would drop what it sets, instanceID (the fence between controllers) included.
type Watcher struct {
	opts         Options
	log          *slog.Logger
	metrics      *metrics
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
	current      atomic.Pointer[config.Config]

	mu          sync.Mutex
	subscribers []func(*config.Config)
	reported    map[string]bool // unsupported keys already logged
	lastInvalid string          // the last invalid version reported (resourceVersion and data), "" after a valid one
	// inForce: a config came into force, from a valid version, a deletion, or (at sync) the ConfigMap's
	// absence. Until then an invalid version is startErr, and read errors are the start's.
	inForce  bool
	startErr error
}

// NewWatcher builds a Watcher; Run starts it. Until the first version is read the config is empty.
func NewWatcher(opts Options) (*Watcher, error) {
	if opts.Kube == nil {
		return nil, errors.New("controllerconfig: Options.Kube is required")
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	w := &Watcher{opts: opts, log: opts.Log.With("configmap", opts.Namespace+"/"+opts.Name), metrics: m, reported: map[string]bool{}}
	w.current.Store(&config.Config{})
	w.informer = cache.NewSharedIndexInformer(w.listWatch(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if err := w.informer.SetWatchErrorHandlerWithContext(w.readFailed); err != nil {
		return nil, fmt.Errorf("setting the controller ConfigMap's read error handler: %w", err)
	}
	// Synced through this registration, not the informer: the informer syncs when its store holds the
	// ConfigMap, before the handler has put its config in force.
	w.registration, err = w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.load(obj) },
		UpdateFunc: func(_, obj any) { w.load(obj) },
		DeleteFunc: w.deleted,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the controller ConfigMap handler: %w", err)
	}
	return w, nil
}

// listWatch lists and watches the one ConfigMap by name.
func (w *Watcher) listWatch() cache.ListerWatcher {
	cms := w.opts.Kube.CoreV1().ConfigMaps(w.opts.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", w.opts.Name).String()
	// The client says whether it streams watch lists (the fake clientset does not).
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return cms.Watch(ctx, o)
		},
	}, w.opts.Kube)
}

// Run watches the ConfigMap until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	if w.opts.Recorder == nil {
		events := record.NewBroadcaster(record.WithContext(ctx))
		events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.opts.Kube.CoreV1().Events("")})
		defer events.Shutdown()
		w.mu.Lock()
		w.opts.Recorder = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "wfguard-controller"})
		w.mu.Unlock()
	}
	w.informer.RunWithContext(ctx)
}

// WaitForSync blocks until the ConfigMap was read and its config is in force (the defaults when it does
// not exist), or ctx ends. Read errors are retried meanwhile (logged): an error is never taken for an
// absent ConfigMap. It fails when the ConfigMap exists but no version read so far is valid.
func (w *Watcher) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), w.registration.HasSynced) {
		return fmt.Errorf("reading the controller ConfigMap %s/%s: %w", w.opts.Namespace, w.opts.Name, ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.startErr != nil {
		return w.startErr
	}
	w.inForce = true // the version read, or the defaults of an absent ConfigMap
	return nil
}

// HasSynced reports whether the ConfigMap (or its absence) was read and its config is in force.
func (w *Watcher) HasSynced() bool { return w.registration.HasSynced() }

// Current is the config in force. Shared: do not modify it.
func (w *Watcher) Current() *config.Config { return w.current.Load() }

// OnChange calls f with every config that comes into force after it is registered.
func (w *Watcher) OnChange(f func(*config.Config)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subscribers = append(w.subscribers, f)
}

func (w *Watcher) load(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		w.log.Error("controller ConfigMap watch delivered an object that is not a ConfigMap", "type", fmt.Sprintf("%T", obj))
		return
	}
	cfg, err := Parse(cm)
	if err != nil {
		w.refuse(cm, err)
		return
	}
	w.mu.Lock()
	w.lastInvalid = ""
	w.inForce, w.startErr = true, nil
	w.mu.Unlock()
	w.metrics.loads.WithLabelValues(resultValid).Inc()
	w.log.Info("controller config in force", "resourceVersion", cm.ResourceVersion)
	w.reportUnsupported(cfg)
	w.publish(cfg)
}

// refuse keeps the config in force and says why the new version was not taken, once per version. Before
// any config is in force it makes the start fail instead.
func (w *Watcher) refuse(cm *corev1.ConfigMap, err error) {
	version := fmt.Sprint(cm.ResourceVersion, cm.Data) // fmt prints maps sorted
	w.mu.Lock()
	seen := w.lastInvalid == version
	w.lastInvalid = version
	recorder := w.opts.Recorder
	consequence := "the last valid config stays in force"
	if !w.inForce {
		consequence = "the controller does not start with it"
		w.startErr = fmt.Errorf("the controller ConfigMap %s/%s is invalid, so the controller does not start (argo's does not either; "+
			"fix it, or delete it to run with the defaults): %w", cm.Namespace, cm.Name, err)
	}
	w.mu.Unlock()
	if seen {
		return
	}
	w.metrics.loads.WithLabelValues(resultInvalid).Inc()
	w.log.Error("controller ConfigMap is invalid; "+consequence, "resourceVersion", cm.ResourceVersion, "err", err)
	if recorder != nil {
		recorder.Eventf(cm, corev1.EventTypeWarning, ReasonConfigMapInvalid, "%v; %s", err, consequence)
	}
}

// readFailed reports an error reading or watching the ConfigMap; the informer retries with backoff. Until
// a config is in force it is logged at error level, since the controller waits for it to start.
func (w *Watcher) readFailed(ctx context.Context, r *cache.Reflector, err error) {
	w.mu.Lock()
	inForce := w.inForce
	w.mu.Unlock()
	if inForce {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	w.log.Error("cannot read the controller ConfigMap; retrying, and not starting until it is read", "err", err)
}

// deleted keeps the config in force: falling back to the defaults while running would drop the
// ConfigMap's fences (instanceID, workflowRestrictions, the executor's settings) on whoever may delete a
// ConfigMap in the controller's namespace. argo's controller exits instead; wfguard keeps running, and the
// defaults apply from the next start.
func (w *Watcher) deleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	w.mu.Lock()
	w.inForce, w.startErr = true, nil
	recorder := w.opts.Recorder
	w.mu.Unlock()
	w.metrics.loads.WithLabelValues(resultDeleted).Inc()
	w.log.Error("controller ConfigMap deleted; the last valid config stays in force until the controller restarts, which then starts with the defaults")
	if cm, ok := obj.(*corev1.ConfigMap); ok && recorder != nil {
		recorder.Event(cm, corev1.EventTypeWarning, ReasonConfigMapDeleted,
			"the controller ConfigMap was deleted; the last valid config stays in force until the controller restarts, which then starts with the defaults")
	}
}

func (w *Watcher) publish(cfg *config.Config) {
	w.current.Store(cfg)
	w.mu.Lock()
	subs := append([]func(*config.Config){}, w.subscribers...)
	w.mu.Unlock()
	for _, f := range subs {
		f(cfg)
	}
}

// reportUnsupported logs each set key wfguard does not apply, once per key for the life of the process.
func (w *Watcher) reportUnsupported(cfg *config.Config) {
	keys, err := SetKeys(cfg)
	if err != nil {
		w.log.Error("listing the keys of the controller config", "err", err)
		return
	}
	count := 0
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if Honoured[k] {
			continue
		}
		count++
		if w.reported[k] {
			continue
		}
		w.reported[k] = true
		w.log.Warn("controller ConfigMap key not applied by wfguard", "key", k, "reason", unsupportedReason(k))
	}
	for path, reason := range partlyApplied(cfg) {
		count++
		if !w.reported[path] {
			w.reported[path] = true
			w.log.Warn("controller ConfigMap setting not applied by wfguard", "key", path, "reason", reason)
		}
	}
	w.metrics.unsupported.Set(float64(count))
}
