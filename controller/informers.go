package controller

import (
	"context"
	"fmt"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Index names.
const (
	// IndexWorkflowKey maps pods and task results to "namespace/workflow-name" (their workflow label).
	IndexWorkflowKey = "workflowKey"
	// IndexWorkflowUID maps workflows, pods and task results to the workflow UID they belong to.
	IndexWorkflowUID = "workflowUID"
)

// stripManagedFields drops managedFields before caching: they are large and never read here.
func stripManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

func workflowKeyOf(obj metav1.Object) string {
	name := obj.GetLabels()[common.LabelKeyWorkflow]
	if name == "" {
		return ""
	}
	return obj.GetNamespace() + "/" + name
}

func indexByWorkflowKey(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if k := workflowKeyOf(o); k != "" {
		return []string{k}, nil
	}
	return nil, nil
}

// indexByWorkflowUID uses the object's own UID for workflows and the owner Workflow's UID for the rest.
func indexByWorkflowUID(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Workflow" {
		return []string{string(o.GetUID())}, nil
	}
	var uids []string
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Workflow" {
			uids = append(uids, string(ref.UID))
		}
	}
	return uids, nil
}

// informers holds the controller's caches.
type informerSet struct {
	dynamicFactory dynamicinformer.DynamicSharedInformerFactory
	kubeFactory    informers.SharedInformerFactory
	wg             sync.WaitGroup
	workflows      cache.SharedIndexInformer
	pods           cache.SharedIndexInformer
	results        cache.SharedIndexInformer
	actions        cache.SharedIndexInformer
}

func (c *Controller) newInformers() (*informerSet, error) {
	selector := common.LabelKeyWorkflow
	instance := "!" + common.LabelKeyControllerInstanceID
	if c.opts.InstanceID != "" {
		instance = common.LabelKeyControllerInstanceID + "=" + c.opts.InstanceID
	}
	s := &informerSet{}
	s.dynamicFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dynamic, c.opts.ResyncPeriod, c.opts.Namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = instance })
	s.workflows = s.dynamicFactory.ForResource(wfv1.SchemeGroupVersion.WithResource("workflows")).Informer()

	s.kubeFactory = informers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.ResyncPeriod, informers.WithNamespace(c.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector + "," + instance }))
	s.pods = s.kubeFactory.Core().V1().Pods().Informer()

	// argo's generated factory cannot be shut down (no way to wait for its goroutines), so this informer is
	// built and run directly.
	results := c.argo.ArgoprojV1alpha1().WorkflowTaskResults(c.opts.Namespace)
	var resultsLW cache.ListerWatcher = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector + "," + instance
			return results.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector + "," + instance
			return results.Watch(ctx, o)
		},
	}
	if c.opts.WrapListWatch != nil {
		resultsLW = c.opts.WrapListWatch("workflowtaskresults", resultsLW)
	}
	s.results = cache.NewSharedIndexInformer(resultsLW, &wfv1.WorkflowTaskResult{}, c.opts.ResyncPeriod, cache.Indexers{})

	for name, inf := range map[string]cache.SharedIndexInformer{"workflows": s.workflows, "pods": s.pods, "workflowtaskresults": s.results} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return nil, fmt.Errorf("setting the %s informer transform: %w", name, err)
		}
		indexers := cache.Indexers{IndexWorkflowUID: indexByWorkflowUID}
		if name != "workflows" {
			indexers[IndexWorkflowKey] = indexByWorkflowKey
		}
		if err := inf.AddIndexers(indexers); err != nil {
			return nil, fmt.Errorf("adding %s indexes: %w", name, err)
		}
	}
	if _, err := s.workflows.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueObject(obj) },
		UpdateFunc: func(old, obj any) {
			if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetResourceVersion() != n.GetResourceVersion() {
				c.enqueueObject(obj)
			}
		},
		DeleteFunc: func(obj any) {
			c.forgetWrites(obj)
			c.forgetDeferred(obj)
			c.enqueueObject(obj)
		},
	}); err != nil {
		return nil, fmt.Errorf("adding workflow handlers: %w", err)
	}
	owned := cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueOwner(obj) },
		UpdateFunc: func(old, obj any) {
			if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetResourceVersion() != n.GetResourceVersion() {
				c.observeReleased(obj)
				c.enqueueOwner(obj)
			}
		},
		DeleteFunc: func(obj any) {
			c.forgetReleased(obj)
			c.enqueueOwner(obj)
		},
	}
	s.actions = c.newActionInformer()
	if _, err := s.actions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueAction,
		UpdateFunc: func(old, obj any) {
			if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetResourceVersion() != n.GetResourceVersion() {
				c.enqueueAction(obj)
			}
		},
		DeleteFunc: c.enqueueAction, // its record in appliedActions can be pruned
	}); err != nil {
		return nil, fmt.Errorf("adding workflowaction handlers: %w", err)
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"pods": s.pods, "workflowtaskresults": s.results} {
		if _, err := inf.AddEventHandler(owned); err != nil {
			return nil, fmt.Errorf("adding %s handlers: %w", name, err)
		}
	}
	return s, nil
}

func (s *informerSet) start(stop <-chan struct{}) {
	s.dynamicFactory.Start(stop)
	s.kubeFactory.Start(stop)
	for _, inf := range []cache.SharedIndexInformer{s.results, s.actions} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			inf.Run(stop)
		}()
	}
}

func (s *informerSet) shutdown() {
	s.dynamicFactory.Shutdown()
	s.kubeFactory.Shutdown()
	s.wg.Wait()
}

func (s *informerSet) synced() []cache.InformerSynced {
	return []cache.InformerSynced{s.workflows.HasSynced, s.pods.HasSynced, s.results.HasSynced, s.actions.HasSynced}
}

func (c *Controller) enqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Error("computing workflow key", "err", err)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner enqueues the workflow a pod or task result belongs to, without delay: the queue coalesces.
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if key := workflowKeyOf(o); key != "" {
		c.queue.Add(key)
	}
}

// podsOf returns the workflow's pods by node ID, skipping pods of another workflow UID (same name, older).
func (c *Controller) podsOf(wf *wfv1.Workflow) map[string]*corev1.Pod {
	objs, _ := c.inf.pods.GetIndexer().ByIndex(IndexWorkflowUID, string(wf.UID))
	pods := make(map[string]*corev1.Pod, len(objs))
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		id := pod.Annotations[common.AnnotationKeyNodeID]
		if id == "" {
			continue
		}
		pods[id] = pod
	}
	return pods
}

// resultsOf returns the task results labelled with the workflow's name; Merge checks their owner UID.
func (c *Controller) resultsOf(key string) []*wfv1.WorkflowTaskResult {
	objs, _ := c.inf.results.GetIndexer().ByIndex(IndexWorkflowKey, key)
	out := make([]*wfv1.WorkflowTaskResult, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*wfv1.WorkflowTaskResult))
	}
	return out
}
