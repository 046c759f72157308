package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// recorder keeps every version of every object the invariants look at, from watches of the server (not
// the controller's caches). Resource versions order events across resources: they come from one etcd.
type recorder struct {
	mu        sync.Mutex
	workflows []*unstructured.Unstructured // every version, in order
	pods      []*corev1.Pod
	results   []*wfv1.WorkflowTaskResult
	actions   []*v1alpha1.WorkflowAction
	deleted   map[string]int64 // workflow UID → RV of its deletion event
	podEvents int
	progress  chan struct{}
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

func startRecorder(ctx context.Context, kube kubernetes.Interface, argo versioned.Interface, dyn dynamic.Interface, actions *v1alpha1.NamespacedClient, ns string) (*recorder, error) {
	r := &recorder{deleted: map[string]int64{}, progress: make(chan struct{}, 1)}
	ctx, r.stop = context.WithCancel(ctx)
	wfs := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}).Namespace(ns)
	sources := []struct {
		name string
		lw   cache.WatcherWithContext
		on   func(watch.Event)
	}{
		{"workflows", &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return wfs.Watch(ctx, o) }}, r.onWorkflow},
		{"pods", &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kube.CoreV1().Pods(ns).Watch(ctx, o)
		}}, r.onPod},
		{"results", &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return argo.ArgoprojV1alpha1().WorkflowTaskResults(ns).Watch(ctx, o)
		}}, r.onResult},
		{"actions", &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return actions.Watch(ctx, o)
		}}, r.onAction},
	}
	// The namespace is new: every event after the current revision is every event there is.
	start, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		r.close()
		return nil, fmt.Errorf("reading the current revision: %w", err)
	}
	for _, s := range sources {
		// RetryWatcher resumes from the last resource version, so no event between two watch streams is lost.
		w, err := watchtools.NewRetryWatcherWithContext(ctx, start.ResourceVersion, s.lw)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("watching %s: %w", s.name, err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer w.Stop()
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type == watch.Error || ev.Type == watch.Bookmark {
						continue
					}
					s.on(ev)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return r, nil
}

func (r *recorder) close() {
	r.stop()
	r.wg.Wait()
}

func (r *recorder) signal() {
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

func (r *recorder) onWorkflow(ev watch.Event) {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	if ev.Type == watch.Deleted {
		r.deleted[string(u.GetUID())] = rv(u.GetResourceVersion())
	} else {
		r.workflows = append(r.workflows, u)
	}
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) onPod(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok || ev.Type == watch.Deleted {
		return
	}
	r.mu.Lock()
	r.pods = append(r.pods, p)
	r.podEvents++
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) onResult(ev watch.Event) {
	res, ok := ev.Object.(*wfv1.WorkflowTaskResult)
	if !ok || ev.Type == watch.Deleted {
		return
	}
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
}

func (r *recorder) onAction(ev watch.Event) {
	a, ok := ev.Object.(*v1alpha1.WorkflowAction)
	if !ok || ev.Type == watch.Deleted {
		return
	}
	r.mu.Lock()
	r.actions = append(r.actions, a)
	r.mu.Unlock()
	r.signal()
}

// snapshot copies the histories for checking.
func (r *recorder) snapshot() history {
	r.mu.Lock()
	defer r.mu.Unlock()
	deleted := make(map[string]int64, len(r.deleted))
	for k, v := range r.deleted {
		deleted[k] = v
	}
	return history{workflows: append([]*unstructured.Unstructured(nil), r.workflows...), pods: append([]*corev1.Pod(nil), r.pods...),
		results: append([]*wfv1.WorkflowTaskResult(nil), r.results...), actions: append([]*v1alpha1.WorkflowAction(nil), r.actions...), deleted: deleted}
}

func (r *recorder) podEventCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.podEvents
}

type history struct {
	workflows []*unstructured.Unstructured
	pods      []*corev1.Pod
	results   []*wfv1.WorkflowTaskResult
	actions   []*v1alpha1.WorkflowAction
	deleted   map[string]int64
}

// rv reads a resource version as the etcd revision it is on this control plane (a test oracle only: the
// API calls it opaque).
func rv(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
