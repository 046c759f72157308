package simnode

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DefaultNodeName is the node the simulated kubelet binds pods to.
const DefaultNodeName = "wfguard-simnode"

// Options configure a simulated node.
type Options struct {
	Config *rest.Config
	// Namespace limits the node to one namespace; empty watches all.
	Namespace string
	Script    Script
	// Seed drives the jitter; the same seed gives the same delays.
	Seed     int64
	NodeName string
	// ImpersonateServiceAccount makes the executor write task results as the pod's service account, so
	// missing executor RBAC fails the wait container as it would on a real cluster. The identity carries
	// the pod claims a pod-bound (projected) token gives (authentication.kubernetes.io/pod-name, pod-uid),
	// which admission policies such as config/policy's can check. A pod with an exec-sa-token volume
	// (executor.serviceAccountName) writes as the account its token Secret is annotated for, without pod
	// claims, as argoexec does with that Secret's token.
	ImpersonateServiceAccount bool
	Clock                     clock.Clock
	Logf                      func(format string, args ...any)
}

// Node plays kubelet and argoexec for every pod labelled workflows.argoproj.io/workflow.
type Node struct {
	opts    Options
	kube    kubernetes.Interface
	argo    versioned.Interface
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	factory informers.SharedInformerFactory

	mu       sync.Mutex
	rnd      *rand.Rand
	pods     map[types.UID]*podRun
	journal  map[string][]string // "ns/name" → steps
	watchers []chan struct{}
	execs    map[string]versioned.Interface // impersonated executor clients by "ns/sa"
}

type podRun struct {
	deleted   chan struct{}
	closeOnce sync.Once

	// activeDeadlineSeconds as last seen; the kubelet ends the pod once it has run that long.
	mu         sync.Mutex
	ads        *int64
	adsChanged chan struct{}
}

func newPodRun(pod *corev1.Pod) *podRun {
	r := &podRun{deleted: make(chan struct{}), adsChanged: make(chan struct{}, 1)}
	r.ads = pod.Spec.ActiveDeadlineSeconds
	return r
}

func (r *podRun) setDeadline(ads *int64) {
	r.mu.Lock()
	changed := (r.ads == nil) != (ads == nil) || (ads != nil && *r.ads != *ads)
	if ads != nil {
		v := *ads
		r.ads = &v
	} else {
		r.ads = nil
	}
	r.mu.Unlock()
	if changed {
		select {
		case r.adsChanged <- struct{}{}:
		default:
		}
	}
}

func (r *podRun) deadline() *int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ads
}

// Start begins simulating; it returns once the pod cache has synced.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("starting simulated node: Options.Config is nil")
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	// A kubelet speaks protobuf for pods, and so does this one: the API server then encodes a pod's watch
	// events in the content type nodes and controllers share.
	kubeConfig := rest.CopyConfig(opts.Config)
	kubeConfig.ContentType = runtime.ContentTypeProtobuf
	kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return nil, fmt.Errorf("starting simulated node: %w", err)
	}
	argo, err := versioned.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("starting simulated node: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	n := &Node{
		opts: opts, kube: kube, argo: argo, cancel: cancel,
		rnd:     newRand(opts.Seed),
		pods:    map[types.UID]*podRun{},
		journal: map[string][]string{},
		execs:   map[string]versioned.Interface{},
	}
	n.factory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = common.LabelKeyWorkflow }))
	podInformer := n.factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { n.observe(ctx, obj) },
		DeleteFunc: func(obj any) { n.forget(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("starting simulated node: %w", err)
	}
	n.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		n.Stop()
		return nil, fmt.Errorf("starting simulated node: pod cache never synced")
	}
	return n, nil
}

// Stop ends the simulation and waits for every goroutine it started.
func (n *Node) Stop() {
	n.cancel()
	n.factory.Shutdown()
	n.wg.Wait()
}

// Journal returns the steps simulated so far for the pod ns/name, in order.
func (n *Node) Journal(namespace, name string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.journal[namespace+"/"+name]...)
}

// WaitForStep blocks until the pod's journal holds step, or ctx ends.
func (n *Node) WaitForStep(ctx context.Context, namespace, name, step string) error {
	for {
		n.mu.Lock()
		for _, s := range n.journal[namespace+"/"+name] {
			if s == step {
				n.mu.Unlock()
				return nil
			}
		}
		ch := make(chan struct{})
		n.watchers = append(n.watchers, ch)
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s/%s to reach step %q (journal %v): %w",
				namespace, name, step, n.Journal(namespace, name), ctx.Err())
		}
	}
}

func (n *Node) record(pod *corev1.Pod, step string) {
	n.mu.Lock()
	key := pod.Namespace + "/" + pod.Name
	n.journal[key] = append(n.journal[key], step)
	watchers := n.watchers
	n.watchers = nil
	n.mu.Unlock()
	for _, ch := range watchers {
		close(ch)
	}
	n.opts.Logf("simnode: pod %s: %s", key, step)
}

func (n *Node) observe(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	run, tracked := n.pods[pod.UID]
	if !tracked && pod.DeletionTimestamp == nil && !terminal(pod) {
		run = newPodRun(pod)
		n.pods[pod.UID] = run
		n.wg.Add(1)
		n.mu.Unlock()
		go func() {
			defer n.wg.Done()
			n.runPod(ctx, pod.DeepCopy(), run)
		}()
		return
	}
	if !tracked && pod.DeletionTimestamp != nil {
		// Not ours to run (already terminal, or from before this node started): finish the deletion as a
		// kubelet would.
		run = newPodRun(pod)
		n.pods[pod.UID] = run
		n.wg.Add(1)
		n.mu.Unlock()
		go func() {
			defer n.wg.Done()
			n.finishDeletion(ctx, pod.DeepCopy())
		}()
		return
	}
	n.mu.Unlock()
	if tracked {
		run.setDeadline(pod.Spec.ActiveDeadlineSeconds)
	}
	if tracked && pod.DeletionTimestamp != nil {
		run.closeOnce.Do(func() { close(run.deleted) })
	}
}

func (n *Node) forget(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		n.record(pod, StepRemoved)
	}
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5eed))
}

// jittered scales d by a seeded factor in [1-j, 1+j].
func (n *Node) jittered(d time.Duration, j float64) time.Duration {
	if d <= 0 || j <= 0 {
		return d
	}
	n.mu.Lock()
	f := 1 + j*(2*n.rnd.Float64()-1)
	n.mu.Unlock()
	return time.Duration(float64(d) * f)
}

// podInfo reads the pod the way argoexec does.
func podInfo(pod *corev1.Pod) (PodInfo, error) {
	info := PodInfo{Pod: pod}
	env := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == common.InitContainerName {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == common.WaitContainerName {
			for _, e := range c.Env {
				if _, ok := env[e.Name]; !ok {
					env[e.Name] = e.Value
				}
			}
		}
	}
	raw := env[common.EnvVarTemplate]
	if raw == "" {
		return info, fmt.Errorf("pod %s/%s has no %s on its init container", pod.Namespace, pod.Name, common.EnvVarTemplate)
	}
	if err := json.Unmarshal([]byte(raw), &info.Template); err != nil {
		return info, fmt.Errorf("pod %s/%s: parsing %s: %w", pod.Namespace, pod.Name, common.EnvVarTemplate, err)
	}
	info.NodeID = env[common.EnvVarNodeID]
	info.WorkflowName = env[common.EnvVarWorkflowName]
	info.WorkflowUID = env[common.EnvVarWorkflowUID]
	info.InstanceID = env[common.EnvVarInstanceID]
	info.IncludeScriptOutput = env[common.EnvVarIncludeScriptOutput] == "true"
	if info.NodeID == "" || info.WorkflowName == "" || info.WorkflowUID == "" {
		return info, fmt.Errorf("pod %s/%s lacks %s, %s or %s", pod.Namespace, pod.Name,
			common.EnvVarNodeID, common.EnvVarWorkflowName, common.EnvVarWorkflowUID)
	}
	return info, nil
}

// executorClient is the client the wait container writes task results with.
func (n *Node) executorClient(pod *corev1.Pod) (versioned.Interface, error) {
	if !n.opts.ImpersonateServiceAccount {
		return n.argo, nil
	}
	sa, claims := pod.Spec.ServiceAccountName, PodClaims(pod.Name, string(pod.UID))
	if sa == "" {
		sa = "default"
	}
	if account, err := n.executorAccount(pod); err != nil || account != "" {
		// argoexec reads the executor ServiceAccount's token Secret: that account, no pod claims.
		sa, claims = account, nil
		if err != nil {
			return nil, err
		}
	}
	key := pod.Namespace + "/" + sa + "/" + pod.Name + "/" + string(pod.UID)
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.execs[key]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(n.opts.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + pod.Namespace + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + pod.Namespace, "system:authenticated"},
		Extra:    claims,
	}
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the executor client for %s: %w", key, err)
	}
	n.execs[key] = c
	return c, nil
}

// executorAccount is the ServiceAccount whose token the pod's exec-sa-token volume holds, as the kubelet
// would mount it: the account its kubernetes.io/service-account-token Secret is annotated for ("" when the
// pod has no such volume). A Secret that cannot be read fails the wait container, as a mount would.
func (n *Node) executorAccount(pod *corev1.Pod) (string, error) {
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == common.ServiceAccountTokenVolumeName && v.Secret != nil
	})
	if i < 0 {
		return "", nil
	}
	name := pod.Spec.Volumes[i].Secret.SecretName
	secret, err := n.kube.CoreV1().Secrets(pod.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("mounting the executor token Secret %s/%s: %w", pod.Namespace, name, err)
	}
	if account := secret.Annotations[corev1.ServiceAccountNameKey]; account != "" {
		return account, nil
	}
	return "", fmt.Errorf("the executor token Secret %s/%s names no ServiceAccount", pod.Namespace, name)
}

// PodClaims are the user extras the API server derives from a pod-bound ServiceAccount token.
func PodClaims(podName, podUID string) map[string][]string {
	return map[string][]string{
		"authentication.kubernetes.io/pod-name": {podName},
		"authentication.kubernetes.io/pod-uid":  {podUID},
	}
}

// isGone reports errors that mean the pod no longer exists.
func isGone(err error) bool { return apierrors.IsNotFound(err) }
