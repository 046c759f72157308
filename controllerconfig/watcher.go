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

// ReasonConfigMapInvalid is the Warning Event on the ConfigMap when an edit cannot be parsed.
const ReasonConfigMapInvalid = "ConfigMapInvalid"

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
type Watcher struct {
	opts     Options
	log      *slog.Logger
	metrics  *metrics
	informer cache.SharedIndexInformer
	current  atomic.Pointer[config.Config]

	mu          sync.Mutex
	subscribers []func(*config.Config)
	reported    map[string]bool // unsupported keys already logged
	lastInvalid string          // the last invalid version reported (resourceVersion and data), "" after a valid one
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
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.load(obj) },
		UpdateFunc: func(_, obj any) { w.load(obj) },
		DeleteFunc: func(any) { w.reset() },
	}); err != nil {
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

// WaitForSync blocks until the ConfigMap (or its absence) was read, or ctx ends.
func (w *Watcher) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		return fmt.Errorf("reading the controller ConfigMap %s/%s: %w", w.opts.Namespace, w.opts.Name, ctx.Err())
	}
	return nil
}

// HasSynced reports whether the ConfigMap (or its absence) was read.
func (w *Watcher) HasSynced() bool { return w.informer.HasSynced() }

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
	w.mu.Unlock()
	w.metrics.loads.WithLabelValues(resultValid).Inc()
	w.log.Info("controller config in force", "resourceVersion", cm.ResourceVersion)
	w.reportUnsupported(cfg)
	w.publish(cfg)
}

// refuse keeps the config in force and says why the new version was not taken, once per version.
func (w *Watcher) refuse(cm *corev1.ConfigMap, err error) {
	version := fmt.Sprint(cm.ResourceVersion, cm.Data) // fmt prints maps sorted
	w.mu.Lock()
	seen := w.lastInvalid == version
	w.lastInvalid = version
	recorder := w.opts.Recorder
	w.mu.Unlock()
	if seen {
		return
	}
	w.metrics.loads.WithLabelValues(resultInvalid).Inc()
	w.log.Error("controller ConfigMap is invalid; the last valid config stays in force", "resourceVersion", cm.ResourceVersion, "err", err)
	if recorder != nil {
		recorder.Eventf(cm, corev1.EventTypeWarning, ReasonConfigMapInvalid, "%v; the last valid config stays in force", err)
	}
}

func (w *Watcher) reset() {
	w.metrics.loads.WithLabelValues(resultDeleted).Inc()
	w.log.Warn("controller ConfigMap deleted; the defaults are in force")
	w.publish(&config.Config{})
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
