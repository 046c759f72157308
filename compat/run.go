package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Controller names the workflow controller a run uses.
type Controller string

const (
	Argo    Controller = "argo"
	WFGuard Controller = "wfguard"
)

// Shared settings: both controllers run with the same ones (the "same flags").
const (
	Workers = 4
	QPS     = 50
	Burst   = 100
	// Namespace is where every case runs, under both controllers, so pods compare field by field.
	Namespace = "compat"
	// ArtifactBucket is the default artifact repository of the namespace (artifact-repositories ConfigMap).
	ArtifactBucket = "compat-artifacts"
)

// RunOptions configure Run.
type RunOptions struct {
	Root       string
	Controller Controller
	// WFGuardBinary is the wfguard binary for Controller WFGuard (e.g. built by the caller with go build).
	WFGuardBinary string
	Corpus        *Corpus
	// Timeout bounds each case: a workflow not completed by then is observed as it stands. Default 150s:
	// stock argo takes tens of seconds per DAG level under the corpus's load.
	Timeout time.Duration
	// InFlight is how many cases run at once. Default 12.
	InFlight int
	Logf     func(format string, args ...any)
}

// Run starts a fresh control plane with the simulated node (ExecutorModel) and the chosen controller out of
// process, installs the corpus's objects, runs every case and observes it. A case the API server refuses is
// observed with its error; a controller that exits ends the run with an error.
func Run(ctx context.Context, opts RunOptions) (obs []Observation, err error) {
	opts = opts.withDefaults()
	cp, err := controlplane.Start(ctx, controlplane.Options{Root: opts.Root, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	config := cp.Config()
	config.QPS, config.Burst = 200, 400
	if err := prepareNamespace(ctx, config, opts); err != nil {
		return nil, err
	}
	node, err := simnode.Start(ctx, simnode.Options{Config: config, Namespace: Namespace, Script: ExecutorModel(), Logf: func(string, ...any) {}})
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	pods, stopPods, err := recordPods(ctx, config)
	if err != nil {
		return nil, err
	}
	defer stopPods()
	proc, err := startController(ctx, config, cp.Kubeconfig, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			opts.Logf("%s log (last 40 lines):\n%s", opts.Controller, proc.LogTail(40))
		}
		err = errors.Join(err, proc.Stop(10*time.Second))
	}()
	return runCases(ctx, config, pods, proc, opts)
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Timeout == 0 {
		o.Timeout = 150 * time.Second
	}
	if o.InFlight == 0 {
		o.InFlight = 12
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// prepareNamespace installs argo's CRDs and creates the namespace the cases run in, with what they need.
func prepareNamespace(ctx context.Context, config *rest.Config, opts RunOptions) error {
	if err := controlplane.InstallCRDs(ctx, config, filepath.Join(opts.Root, "config", "crd", "argo"), time.Minute); err != nil {
		return err
	}
	if err := controlplane.CreateNamedNamespace(ctx, config, Namespace); err != nil {
		return err
	}
	return installSupport(ctx, config, opts.Corpus)
}

// runCases runs the corpus's cases, InFlight at once, and observes each; the controller exiting ends the run.
func runCases(ctx context.Context, config *rest.Config, pods *podRecorder, proc *controlplane.Process, opts RunOptions) ([]Observation, error) {
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	obs := make([]Observation, len(opts.Corpus.Cases))
	// A controller that exits ends the cases in flight too: none may write obs after the run returns.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, opts.InFlight)
	var wg sync.WaitGroup
	for i, c := range opts.Corpus.Cases {
		if exited, _ := proc.Exited(); exited {
			cancel()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			obs[i] = runCase(ctx, client, pods, c, opts.Timeout)
		}()
	}
	wg.Wait()
	if exited, perr := proc.Exited(); exited {
		return nil, fmt.Errorf("%s's controller exited during the run (%v)", opts.Controller, perr)
	}
	return obs, ctx.Err()
}

func runCase(ctx context.Context, client versioned.Interface, pods *podRecorder, c Case, timeout time.Duration) Observation {
	wfs := client.ArgoprojV1alpha1().Workflows(Namespace)
	start := time.Now()
	created, err := wfs.Create(ctx, c.Workflow.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		return Observation{Case: c.Name, Source: c.Source, Refused: err.Error()}
	}
	var got *wfv1.Workflow
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		wf, err := wfs.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = wf
		return wf.Status.Phase.Completed(), nil
	})
	if got == nil {
		got = created
	}
	o := observe(c, got, pods.of(got.Name))
	o.Seconds = time.Since(start).Seconds()
	o.TimedOut = !got.Status.Phase.Completed()
	return o
}

func startController(ctx context.Context, config *rest.Config, kubeconfig string, opts RunOptions) (*controlplane.Process, error) {
	image, err := ExecutorImage(opts.Root)
	if err != nil {
		return nil, err
	}
	switch opts.Controller {
	case Argo:
		o, err := StartOracle(ctx, config, OracleOptions{Root: opts.Root, Kubeconfig: kubeconfig, Namespace: Namespace,
			ExecutorImage: image, Workers: Workers, QPS: QPS, Burst: Burst, LogPath: filepath.Join(os.TempDir(), "compat-argo.log")})
		if err != nil {
			return nil, err
		}
		return o.Process, nil
	case WFGuard:
		if opts.WFGuardBinary == "" {
			return nil, errors.New("starting wfguard: RunOptions.WFGuardBinary is required")
		}
		return StartWFGuard(WFGuardOptions{Binary: opts.WFGuardBinary, Kubeconfig: kubeconfig, Namespace: Namespace,
			ExecutorImage: image, LogPath: filepath.Join(os.TempDir(), "compat-wfguard.log")})
	}
	return nil, fmt.Errorf("unknown controller %q", opts.Controller)
}

// installSupport creates the namespace's default artifact repository and the corpus's objects.
func installSupport(ctx context.Context, config *rest.Config, c *Corpus) error {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	repo := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "artifact-repositories", Namespace: Namespace,
			Annotations: map[string]string{"workflows.argoproj.io/default-artifact-repository": "default"}},
		Data: map[string]string{"default": "s3:\n  bucket: " + ArtifactBucket + "\n  endpoint: minio:9000\n  insecure: true\n" +
			"  accessKeySecret:\n    name: my-minio-cred\n    key: accesskey\n  secretKeySecret:\n    name: my-minio-cred\n    key: secretkey\n"},
	}
	if _, err := kube.CoreV1().ConfigMaps(Namespace).Create(ctx, repo, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default artifact repository: %w", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, u := range c.Objects {
		u := u.DeepCopy()
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			u.SetNamespace(Namespace)
			ri = dyn.Resource(m.Resource).Namespace(Namespace)
		}
		if u.GetName() == "" && u.GetGenerateName() != "" {
			u.SetName(u.GetGenerateName() + "x")
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// podRecorder keeps every pod of the namespace as first seen (its spec as the controller created it).
type podRecorder struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod // by name
}

func recordPods(ctx context.Context, config *rest.Config) (*podRecorder, func(), error) {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, nil, err
	}
	r := &podRecorder{pods: map[string]*corev1.Pod{}}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			r.mu.Lock()
			if _, seen := r.pods[pod.Name]; !seen {
				r.pods[pod.Name] = pod.DeepCopy()
			}
			r.mu.Unlock()
		}
	}}); err != nil {
		return nil, nil, err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(stop)
		return nil, nil, errors.New("recording pods: the pod informer did not sync")
	}
	return r, func() { close(stop); factory.Shutdown() }, nil
}

// of returns the pods of workflow name.
func (r *podRecorder) of(name string) []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range r.pods {
		if p.Labels["workflows.argoproj.io/workflow"] == name {
			out = append(out, p)
		}
	}
	return out
}
