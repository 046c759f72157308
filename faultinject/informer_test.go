package faultinject

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

const testLabel = "faultinject-test"

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "fi")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("never %s: %v", what, err)
	}
}

// heard records the names a handler was told about, in order.
type heard struct {
	mu    sync.Mutex
	names []string
}

func (h *heard) OnAdd(obj any, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names = append(h.names, obj.(*corev1.ConfigMap).Name)
}
func (h *heard) OnUpdate(_, _ any) {}
func (h *heard) OnDelete(_ any)    {}
func (h *heard) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.names)
}

// configMapInformer runs an informer on the test's labelled ConfigMaps of ns, its ListerWatcher passed through
// wrapLW and its handler through wrapH; lists counts the lists that reached the API server.
type configMapInformer struct {
	inf   cache.SharedIndexInformer
	heard *heard
	lists atomic.Int32
}

func startConfigMapInformer(t *testing.T, ns string, wrapLW func(cache.ListerWatcher) cache.ListerWatcher,
	wrapH func(cache.ResourceEventHandler) cache.ResourceEventHandler) *configMapInformer {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	c := &configMapInformer{heard: &heard{}}
	var lw cache.ListerWatcher = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			c.lists.Add(1)
			o.LabelSelector = testLabel
			return kube.CoreV1().ConfigMaps(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = testLabel
			return kube.CoreV1().ConfigMaps(ns).Watch(ctx, o)
		},
	}
	c.inf = cache.NewSharedIndexInformer(wrapLW(lw), &corev1.ConfigMap{}, 0, cache.Indexers{})
	var h cache.ResourceEventHandler = c.heard
	if wrapH != nil {
		h = wrapH(h)
	}
	if _, err := c.inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.inf.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	if !cache.WaitForCacheSync(t.Context().Done(), c.inf.HasSynced) {
		t.Fatal("the informer never synced")
	}
	return c
}

func (c *configMapInformer) has(ns, name string) bool {
	_, ok, _ := c.inf.GetStore().GetByKey(ns + "/" + name)
	return ok
}

func createConfigMap(t *testing.T, kube kubernetes.Interface, ns, name string, labels map[string]string) error {
	t.Helper()
	l := map[string]string{testLabel: "yes"}
	for k, v := range labels {
		l[k] = v
	}
	_, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{})
	return err
}

func TestADroppedEventIsMissingFromTheStoreUntilAResetForcesARelist(t *testing.T) {
	ns := namespace(t)
	in := NewInjector(mustRules(t, "lose-one informer resource=configmaps : 1*drop->off\n"+
		"break informer resource=configmaps name=trigger : 1*reset->off"), 1, nil)
	defer in.Close()
	c := startConfigMapInformer(t, ns, func(lw cache.ListerWatcher) cache.ListerWatcher { return in.WrapListWatch("configmaps", lw) }, nil)
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	for _, name := range []string{"lost", "kept"} {
		if err := createConfigMap(t, kube, ns, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "saw the event after the dropped one", func() bool { return c.has(ns, "kept") })
	if c.has(ns, "lost") || slices.Contains(c.heard.get(), "lost") {
		t.Errorf("the dropped event reached the store or the handler")
	}
	if c.lists.Load() != 1 {
		t.Errorf("lists = %d before the reset, want 1", c.lists.Load())
	}
	if err := createConfigMap(t, kube, ns, "trigger", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "relisted after the reset and found the lost ConfigMap", func() bool { return c.has(ns, "lost") && c.has(ns, "trigger") })
	if c.lists.Load() != 2 {
		t.Errorf("lists = %d after one reset, want 2", c.lists.Load())
	}
	j := in.Journal()
	if len(j) != 2 || j[0].Rule != "lose-one" || j[0].Action.Kind != ActionDrop || j[0].Key != "added configmaps "+ns+"/lost" ||
		j[1].Rule != "break" || j[1].Action.Kind != ActionReset {
		t.Errorf("journal = %+v, want the drop of lost then the reset at trigger", j)
	}
}

func TestDelayedWatchEventsReachTheStoreLateAndInOrder(t *testing.T) {
	ns := namespace(t)
	clk := testingclock.NewFakeClock(time.Now())
	in := NewInjector(mustRules(t, "slow informer resource=configmaps : delay(30s)"), 1, clk)
	defer in.Close()
	c := startConfigMapInformer(t, ns, func(lw cache.ListerWatcher) cache.ListerWatcher { return in.WrapListWatch("configmaps", lw) }, nil)
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	for _, name := range []string{"first", "second"} {
		if err := createConfigMap(t, kube, ns, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.WaitInjected(t.Context(), "slow", 2); err != nil {
		t.Fatal(err)
	}
	if c.has(ns, "first") || c.has(ns, "second") {
		t.Fatal("a delayed event reached the store before its delay")
	}
	clk.Step(30 * time.Second)
	eventually(t, "the delayed events arrived", func() bool { return len(c.heard.get()) == 2 })
	if got := c.heard.get(); got[0] != "first" || got[1] != "second" {
		t.Errorf("order = %v, want first then second", got)
	}
}

func TestLateNotifyLeavesTheStoreFreshWhileHandlersHearLate(t *testing.T) {
	ns := namespace(t)
	clk := testingclock.NewFakeClock(time.Now())
	in := NewInjector(mustRules(t, "late informer resource=configmaps : 1*notify-delay(10s)->off"), 1, clk)
	defer in.Close()
	c := startConfigMapInformer(t, ns, func(lw cache.ListerWatcher) cache.ListerWatcher { return lw },
		func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return in.WrapHandler("configmaps", h) })
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if err := createConfigMap(t, kube, ns, "held", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the store has the ConfigMap", func() bool { return c.has(ns, "held") })
	if err := in.WaitInjected(t.Context(), "late", 1); err != nil {
		t.Fatal(err)
	}
	if err := createConfigMap(t, kube, ns, "behind", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the store has the second ConfigMap", func() bool { return c.has(ns, "behind") })
	if got := c.heard.get(); len(got) != 0 {
		t.Fatalf("handlers heard %v before the notify delay (the later one must wait behind the held one)", got)
	}
	clk.Step(10 * time.Second)
	eventually(t, "the handler heard both, late", func() bool { return len(c.heard.get()) == 2 })
	if got := c.heard.get(); got[0] != "held" || got[1] != "behind" {
		t.Errorf("order = %v, want held then behind", got)
	}
}

func TestFaultsStayInsideTheNamespaceAllowList(t *testing.T) {
	inside, outside := namespace(t), namespace(t)
	in := NewInjector(mustRules(t, "drop-all informer resource=configmaps : drop\nfail-all api resource=configmaps : error(500)"), 1, nil)
	in.LimitNamespaces([]string{inside})
	defer in.Close()
	wrap := func(lw cache.ListerWatcher) cache.ListerWatcher { return in.WrapListWatch("configmaps", lw) }
	in1, out := startConfigMapInformer(t, inside, wrap, nil), startConfigMapInformer(t, outside, wrap, nil)
	plain := kubernetes.NewForConfigOrDie(cp.Config())
	faulty := kubernetes.NewForConfigOrDie(withTransport(cp.Config(), in))
	if err := createConfigMap(t, faulty, inside, "x", nil); !apierrors.IsInternalError(err) {
		t.Errorf("create inside the allow-list: err = %v, want an injected 500", err)
	}
	if err := createConfigMap(t, faulty, outside, "x", nil); err != nil {
		t.Errorf("create outside the allow-list was faulted: %v", err)
	}
	if _, err := faulty.CoreV1().ConfigMaps("").List(t.Context(), metav1.ListOptions{LabelSelector: testLabel}); err != nil {
		t.Errorf("a cluster-wide list was faulted: %v", err)
	}
	for _, ns := range []string{inside, outside} {
		if err := createConfigMap(t, plain, ns, "y", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the informer outside saw both ConfigMaps", func() bool { return out.has(outside, "x") && out.has(outside, "y") })
	if err := in.WaitInjected(t.Context(), "drop-all", 1); err != nil {
		t.Fatal(err)
	}
	if in1.has(inside, "y") {
		t.Error("the event inside the allow-list was not dropped")
	}
}
