package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/podidentity"
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
	wg        sync.WaitGroup
	workflows cache.SharedIndexInformer
	pods      cache.SharedIndexInformer
	results   cache.SharedIndexInformer
	actions   cache.SharedIndexInformer
	// configMaps are the parameter ConfigMaps (argo's label rule), read by valueFrom.configMapKeyRef.
	configMaps cache.SharedIndexInformer
	// artifactRepos are the ConfigMaps named artifact-repositories, read at every workflow's start.
	artifactRepos cache.SharedIndexInformer
}

func (c *Controller) newInformers() (*informerSet, error) {
	// Every informer is built and run directly, each ListerWatcher through the WrapListWatch seam (informer
	// faults); argo's generated factory could not be shut down anyway.
	s := &informerSet{}
	c.newWorkflowInformers(s)
	if err := c.newConfigMapInformers(s); err != nil {
		return nil, err
	}
	if err := indexWorkflowObjects(s); err != nil {
		return nil, err
	}
	s.actions = c.newActionInformer()
	if err := c.addHandlers(s); err != nil {
		return nil, err
	}
	return s, nil
}

// instanceSelector is the label requirement of this controller's instance ID: its value, or, without one,
// no instance label at all.
func (c *Controller) instanceSelector() string {
	if c.opts.InstanceID != "" {
		return common.LabelKeyControllerInstanceID + "=" + c.opts.InstanceID
	}
	return "!" + common.LabelKeyControllerInstanceID
}

// newWorkflowInformers caches the workflows of this instance and their pods and task results.
func (c *Controller) newWorkflowInformers(s *informerSet) {
	selector := common.LabelKeyWorkflow
	instance := c.instanceSelector()
	workflows := c.dynamic.Resource(wfv1.SchemeGroupVersion.WithResource("workflows")).Namespace(c.opts.Namespace)
	s.workflows = cache.NewSharedIndexInformer(c.listWatch("workflows", instance,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return workflows.List(ctx, o) }, workflows.Watch),
		&unstructured.Unstructured{}, c.opts.ResyncPeriod, cache.Indexers{})
	// Completed pods (labelled once their node's final state is persisted, by us or by argo) leave the
	// cache, so its memory follows running work rather than history.
	pods := c.kube.CoreV1().Pods(c.opts.Namespace)
	s.pods = cache.NewSharedIndexInformer(c.listWatch("pods", selector+","+common.LabelKeyCompleted+"!=true,"+instance,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) }, pods.Watch),
		&corev1.Pod{}, c.opts.ResyncPeriod, cache.Indexers{})
	results := c.argo.ArgoprojV1alpha1().WorkflowTaskResults(c.opts.Namespace)
	s.results = cache.NewSharedIndexInformer(c.listWatch("workflowtaskresults", selector+","+instance,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return results.List(ctx, o) }, results.Watch),
		&wfv1.WorkflowTaskResult{}, c.opts.ResyncPeriod, cache.Indexers{})
}

// newConfigMapInformers caches the parameter ConfigMaps and the artifact-repositories ConfigMap.
func (c *Controller) newConfigMapInformers(s *informerSet) error {
	configMaps := c.kube.CoreV1().ConfigMaps(c.opts.Namespace)
	s.configMaps = cache.NewSharedIndexInformer(c.listWatch("configmaps", common.LabelKeyConfigMapType+"="+common.LabelValueTypeConfigMapParameter,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return configMaps.List(ctx, o)
		}, configMaps.Watch),
		&corev1.ConfigMap{}, c.opts.ResyncPeriod, cache.Indexers{})
	if err := s.configMaps.SetTransform(stripManagedFields); err != nil {
		return fmt.Errorf("setting the configmaps informer transform: %w", err)
	}
	byName := fields.OneTermEqualSelector("metadata.name", engine.DefaultArtifactRepositoriesConfigMap).String()
	s.artifactRepos = cache.NewSharedIndexInformer(c.selectedListWatch("configmaps", func(o *metav1.ListOptions) { o.FieldSelector = byName },
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return configMaps.List(ctx, o)
		}, configMaps.Watch),
		&corev1.ConfigMap{}, c.opts.ResyncPeriod, cache.Indexers{})
	if err := s.artifactRepos.SetTransform(stripManagedFields); err != nil {
		return fmt.Errorf("setting the artifact-repositories informer transform: %w", err)
	}
	return nil
}

// indexWorkflowObjects indexes workflows by UID, and pods and task results by their workflow's UID and key.
func indexWorkflowObjects(s *informerSet) error {
	for name, inf := range map[string]cache.SharedIndexInformer{"workflows": s.workflows, "pods": s.pods, "workflowtaskresults": s.results} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return fmt.Errorf("setting the %s informer transform: %w", name, err)
		}
		indexers := cache.Indexers{IndexWorkflowUID: indexByWorkflowUID}
		if name != "workflows" {
			indexers[IndexWorkflowKey] = indexByWorkflowKey
		} else {
			indexers[IndexSucceededRun] = indexBySucceededRun
		}
		if err := inf.AddIndexers(indexers); err != nil {
			return fmt.Errorf("adding %s indexes: %w", name, err)
		}
	}
	return nil
}

// addHandlers queues the workflow key of each change the informers see.
func (c *Controller) addHandlers(s *informerSet) error {
	if _, err := s.workflows.AddEventHandler(c.handler("workflows", cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueObject(obj) },
		UpdateFunc: c.workflowUpdated,
		DeleteFunc: c.workflowDeleted,
	})); err != nil {
		return fmt.Errorf("adding workflow handlers: %w", err)
	}
	if _, err := s.actions.AddEventHandler(c.handler("workflowactions", cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueAction,
		UpdateFunc: c.actionUpdated,
		DeleteFunc: func(obj any) {
			c.drainer.Forget(obj)
			c.enqueueAction(obj) // its record in appliedActions can be pruned
		},
	})); err != nil {
		return fmt.Errorf("adding workflowaction handlers: %w", err)
	}
	owned := cache.ResourceEventHandlerFuncs{AddFunc: c.ownedAdded, UpdateFunc: c.ownedUpdated, DeleteFunc: c.ownedDeleted}
	for name, inf := range map[string]cache.SharedIndexInformer{"pods": s.pods, "workflowtaskresults": s.results} {
		if _, err := inf.AddEventHandler(c.handler(name, owned)); err != nil {
			return fmt.Errorf("adding %s handlers: %w", name, err)
		}
	}
	return nil
}

func (c *Controller) workflowUpdated(old, obj any) {
	o, n := old.(metav1.Object), obj.(metav1.Object)
	if o.GetResourceVersion() == n.GetResourceVersion() {
		return
	}
	c.cacheCaughtUp(n)
	if c.ownEcho(n) {
		// Nothing new to see; a late look still catches anything a pass left for its echo.
		c.changedAfter(n.GetNamespace()+"/"+n.GetName(), c.opts.StatusCoalesceWindow)
		return
	}
	if c.heldForWrite(n) {
		return // queued once the write's answer tells whether it is our echo
	}
	c.enqueueObject(obj)
}

func (c *Controller) workflowDeleted(obj any) {
	c.forgetWrites(obj)
	c.drainer.KeepGone(obj)
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, err := meta.Accessor(obj); err == nil {
		c.podgc.Forget(o.GetUID())
		c.engine.Estimates.Forget(o.GetUID())
	}
	c.forgetDeferred(obj)
	c.enqueueObject(obj)
}

func (c *Controller) actionUpdated(old, obj any) {
	if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetResourceVersion() != n.GetResourceVersion() {
		c.drainer.Observed(obj)
		c.enqueueAction(obj)
	}
}

// ownedAdded, ownedUpdated and ownedDeleted handle a workflow's pods and task results.
func (c *Controller) ownedAdded(obj any) {
	c.releaser.PodAdded(obj)
	c.enqueueOwnerAfter(obj, c.informationalDelay(nil, obj))
}

func (c *Controller) ownedUpdated(old, obj any) {
	if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetResourceVersion() != n.GetResourceVersion() {
		c.releaser.PodUpdated(obj)
		c.enqueueOwnerAfter(obj, c.informationalDelay(old, obj))
	}
}

func (c *Controller) ownedDeleted(obj any) {
	if c.releaser.PodDeleted(obj) {
		return // the echo of our own settling patch: about one pass per pod saved
	}
	c.enqueueOwner(obj)
}

// newActionInformer caches the WorkflowActions, indexed by the workflow each names (actions.IndexByWorkflow).
func (c *Controller) newActionInformer() cache.SharedIndexInformer {
	client := c.actions.Namespace(c.opts.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return client.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(c.wrapListWatch("workflowactions", lw), &v1alpha1.WorkflowAction{}, c.opts.ResyncPeriod,
		cache.Indexers{actions.IndexWorkflowKey: actions.IndexByWorkflow})
}

// enqueueAction queues the workflow an action names: its reconcile drains the action.
func (c *Controller) enqueueAction(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if a, ok := obj.(*v1alpha1.WorkflowAction); ok {
		c.changed(actions.WorkflowKey(a))
	}
}

// listWatch lists and watches with the label selector, through the WrapListWatch seam.
func (c *Controller) listWatch(resource, selector string, list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) cache.ListerWatcher {
	return c.selectedListWatch(resource, func(o *metav1.ListOptions) { o.LabelSelector = selector }, list, watchFn)
}

// selectedListWatch lists and watches with the options select sets, through the WrapListWatch seam.
func (c *Controller) selectedListWatch(resource string, sel func(*metav1.ListOptions), list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) cache.ListerWatcher {
	return c.wrapListWatch(resource, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			sel(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			sel(&o)
			return watchFn(ctx, o)
		},
	})
}

// wrapListWatch applies Options.WrapListWatch (informer faults on the watch: a stale store).
func (c *Controller) wrapListWatch(resource string, lw cache.ListerWatcher) cache.ListerWatcher {
	if c.opts.WrapListWatch == nil {
		return lw
	}
	return c.opts.WrapListWatch(resource, lw)
}

// handler applies Options.WrapHandler (informer faults on notification: handlers hear late).
func (c *Controller) handler(resource string, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	if c.opts.WrapHandler == nil {
		return h
	}
	return c.opts.WrapHandler(resource, h)
}

func (s *informerSet) start(stop <-chan struct{}) {
	for _, inf := range []cache.SharedIndexInformer{s.workflows, s.pods, s.results, s.actions, s.configMaps, s.artifactRepos} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			inf.Run(stop)
		}()
	}
}

func (s *informerSet) shutdown() {
	s.wg.Wait()
}

func (s *informerSet) synced() []cache.InformerSynced {
	return []cache.InformerSynced{s.workflows.HasSynced, s.pods.HasSynced, s.results.HasSynced, s.actions.HasSynced, s.configMaps.HasSynced,
		s.artifactRepos.HasSynced}
}

func (c *Controller) enqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Error("computing workflow key", "err", err)
		return
	}
	c.changed(key)
}

// enqueueOwnerAfter enqueues the owner after delay (0: at once).
func (c *Controller) enqueueOwnerAfter(obj any, delay time.Duration) {
	if delay <= 0 {
		c.enqueueOwner(obj)
		return
	}
	if o, err := meta.Accessor(obj); err == nil {
		if key := workflowKeyOf(o); key != "" {
			c.noteInformational(key, c.clock.Now())
			c.changedAfter(key, delay)
		}
	}
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
		c.changed(key)
	}
}

// changed queues key for a pass at once: it changed. The ledger learns of the change before the queue, so
// no worker can take the key and find nothing recorded.
func (c *Controller) changed(key string) {
	c.demand.Changed(key)
	c.queue.Add(key)
}

// changedAfter queues key for a pass after delay, for a change seen now; a pass that begins sooner sees it.
func (c *Controller) changedAfter(key string, delay time.Duration) {
	c.demand.Changed(key)
	c.queue.AddAfter(key, delay)
}

// podsOf returns the workflow's pods by node ID: only those podidentity says the controller created for
// that node. Another workflow UID's pods (same name, older) are not indexed under this UID; a pod that
// claims this UID but fails the rule (another namespace, another name, ...) is reported and ignored.
func (c *Controller) podsOf(wf *wfv1.Workflow) map[string]*corev1.Pod {
	objs, _ := c.inf.pods.GetIndexer().ByIndex(IndexWorkflowUID, string(wf.UID))
	pods := make(map[string]*corev1.Pod, len(objs))
	owner := podidentity.OwnerOf(wf)
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		id := pod.Annotations[common.AnnotationKeyNodeID]
		var node *wfv1.NodeStatus
		if n, ok := wf.Status.Nodes[id]; ok {
			node = &n
		}
		if !c.ours(owner, node, pod) {
			continue
		}
		pods[id] = pod
	}
	// A pod that left the cache still holding the finalizer (someone else changed a label the cache
	// selects on) is still settled by its node's pass, or read back when its node is not final
	// (findMissingPods).
	for _, pod := range c.releaser.Departed(string(wf.UID)) {
		id := pod.Annotations[common.AnnotationKeyNodeID]
		n, ok := wf.Status.Nodes[id]
		if _, cached := pods[id]; cached || !ok || !c.ours(owner, &n, pod) {
			continue
		}
		pods[id] = pod
	}
	return pods
}

// ours reports whether pod is the pod the controller created for node of owner (podidentity); a pod that
// is not is counted and warned about once, on the pod (it may be in a namespace the workflow is not).
func (c *Controller) ours(owner podidentity.Owner, node *wfv1.NodeStatus, pod *corev1.Pod) bool {
	m := podidentity.Check(owner, node, pod)
	if m == podidentity.Match {
		return true
	}
	if c.reported.First(string(pod.UID) + "/ignored/" + string(m)) {
		c.metrics.ignoredPods.WithLabelValues(string(m)).Inc()
		c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonPodIgnored,
			"Pod claims workflow %s/%s (UID %s) but is not the pod the controller created for it (%s); ignored, its finalizers left alone",
			owner.Namespace, owner.Name, owner.UID, m)
		c.log.Warn("ignoring a pod that is not the controller's", "pod", pod.Namespace+"/"+pod.Name, "workflow", owner.Namespace+"/"+owner.Name, "reason", m)
	}
	return false
}

// ReasonPodIgnored is the Warning Event on a pod that claims a workflow it provably does not belong to.
const ReasonPodIgnored = "PodIgnored"

// resultsOf returns the task results labelled with the workflow's name; Merge checks their owner UID.
func (c *Controller) resultsOf(key string) []*wfv1.WorkflowTaskResult {
	objs, _ := c.inf.results.GetIndexer().ByIndex(IndexWorkflowKey, key)
	out := make([]*wfv1.WorkflowTaskResult, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*wfv1.WorkflowTaskResult))
	}
	return out
}

// actionIsOurs reports whether an action names a workflow of this controller's instance: one in the
// workflow cache, or one that no longer exists (no controller runs it). A workflow that exists outside the
// cache is another instance's (--instanceid), and so is its action.
func (c *Controller) actionIsOurs(ctx context.Context, a *v1alpha1.WorkflowAction) (bool, error) {
	if _, ok, _ := c.inf.workflows.GetIndexer().GetByKey(actions.WorkflowKey(a)); ok {
		return true, nil
	}
	_, err := c.dynamic.Resource(workflowsResource).Namespace(a.Namespace).Get(ctx, a.Spec.WorkflowRef.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading workflow %s: %w", actions.WorkflowKey(a), err)
	}
	return false, nil
}
