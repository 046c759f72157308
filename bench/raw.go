package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/podfinalizer"
)

// rawMode is which writes the raw client makes for the throughput workload.
type rawMode int

const (
	// rawMinimum: per node it creates the pod argoexec needs, waits for it to succeed with its result,
	// records the node in the workflow (one update) and removes the finalizer (one patch); per workflow one
	// create and one final update. That is the least a correct controller must write.
	rawMinimum rawMode = iota
	// rawPipeline is DESIGN.md's yardstick, the pipeline's creates and updates without a controller: the
	// writes wfguard makes that users see, in wfguard's order, each running node shown Running once
	// (pipelineWorkflow).
	rawPipeline
)

// rawClientThroughProxy starts a proxy counting into calls for a raw client of namespace ns, and returns
// the client's configs (argo's kinds; Kubernetes' own kinds in protobuf, as wfguard's and the node's clients
// ask for them) with the controllers' QPS and burst. A raw client reaches the API server as the controllers
// do, so what the proxy costs (a hop through the bench process for every request and watch event) is not
// charged to the controllers alone.
func (e *env) rawClientThroughProxy(ns string, calls *callCounter) (config, kubeConfig *rest.Config, closeProxy func(), err error) {
	proxy, err := startProxy(e.config, calls, proxyOptions{LogPath: filepath.Join(e.tmp, ns+"-raw-proxy.log")})
	if err != nil {
		return nil, nil, nil, err
	}
	config = &rest.Config{Host: proxy.URL(), QPS: float32(e.opts.QPS), Burst: e.opts.Burst}
	return config, controller.KubeClientConfig(config, ""), proxy.close, nil
}

// rawRun does the throughput workload without the controller, making the writes of mode, so its rate is
// the control plane's own limit for those writes.
func (e *env) rawRun(ctx context.Context, n, m int, mode rawMode) (RunStats, error) {
	prefix := map[rawMode]string{rawMinimum: "bench-raw", rawPipeline: "bench-raw-pipeline"}[mode]
	obs, err := e.observedNamespace(ctx, prefix)
	if err != nil {
		return RunStats{}, err
	}
	ns := obs.namespace
	defer obs.close()
	calls := newCallCounter()
	config, kubeConfig, closeProxy, err := e.rawClientThroughProxy(ns, calls)
	if err != nil {
		return RunStats{}, err
	}
	defer closeProxy()
	// It learns of pods and results through a watch of its own, as a controller does. Reacting to the
	// measuring observer's own events would leave that watch's delivery out of its hops, and charge it to
	// every controller alone.
	watched, err := startObserver(ctx, kubernetes.NewForConfigOrDie(kubeConfig), versioned.NewForConfigOrDie(config), ns)
	if err != nil {
		return RunStats{}, err
	}
	defer watched.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return RunStats{}, err
	}
	defer node.Stop()
	calls.reset() // the controllers' counts start after their caches synced, too
	c := rawClients{kube: kubernetes.NewForConfigOrDie(kubeConfig), argo: versioned.NewForConfigOrDie(config)}
	if mode == rawPipeline {
		events, recorder, err := rawRecorder(c.kube)
		if err != nil {
			return RunStats{}, err
		}
		defer events.Shutdown()
		c.recorder = recorder
	}
	apiBefore, err := e.apiServerMetrics(ctx, filepath.Join(e.tmp, ns+"-apiserver-metrics-before.txt"))
	if err != nil {
		return RunStats{}, err
	}
	machineBefore, busyBefore, err := e.machineCPU()
	if err != nil {
		return RunStats{}, err
	}
	// The same API server profile as a controller's throughput run (the unmeasured warm-up's too).
	apiProfile := e.startAPIServerCPUProfile(ctx, filepath.Join(e.tmp, ns+"-apiserver-cpu.pprof"))
	begin := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	wfs := make([]string, n)
	for i := range wfs {
		wfs[i] = fmt.Sprintf("raw-%04d", i)
	}
	err = inParallel(n, n, func(i int) error {
		wf := chainWorkflow(wfs[i], m)
		if mode == rawPipeline {
			return pipelineWorkflow(runCtx, c, watched, wf)
		}
		return rawWorkflow(runCtx, c.kube, c.argo, watched, wf)
	})
	if err != nil {
		return RunStats{}, err
	}
	// Measured as the controllers' runs are: until the observer sees the last workflow complete (the
	// client's own calls return before their watch events reach anyone).
	if err := obs.waitWorkflows(runCtx, wfs); err != nil {
		return RunStats{}, err
	}
	machineAfter, busyAfter, err := e.machineCPU()
	if err != nil {
		return RunStats{}, err
	}
	apiAfter, err := e.apiServerMetrics(ctx, filepath.Join(e.tmp, ns+"-apiserver-metrics-after.txt"))
	if err != nil {
		return RunStats{}, err
	}
	apiLoad := apiServerLoad(apiBefore, apiAfter)
	elapsed := obs.lastCompleted(wfs).Sub(begin)
	chain := obs.chainTimes(begin, wfs)
	if err := settleEvents(runCtx, calls); err != nil {
		return RunStats{}, err
	}
	hops := obs.schedulingLatencies(predecessor)
	stats := RunStats{Seconds: elapsed.Seconds(), WorkflowsPerSec: perSecond(n, elapsed), PodsPerSec: perSecond(n*m, elapsed),
		WritesPerPod: float64(calls.writes()) / float64(n*m), Calls: calls.snapshot(n*m, n),
		HopLatency: summarize(hops), hops: hops, Chain: &chain, MachineCPUSeconds: delta(machineAfter, machineBefore), MachineBusySeconds: busyAfter - busyBefore,
		APIServer: &apiLoad}
	// Counted first: a run shorter than the profile would otherwise charge the wait's calls to itself.
	if err := apiProfile.wait(); err != nil {
		return RunStats{}, err
	}
	return stats, nil
}

// rawClients are the raw client's API clients, counted; recorder is set for the pipeline writes.
type rawClients struct {
	kube     kubernetes.Interface
	argo     versioned.Interface
	recorder record.EventRecorder
}

// rawRecorder records Events as the controller does: client-go's broadcaster, correlator and sink, so
// repeated Events become patches of one Event just as the controller's do.
func rawRecorder(kube kubernetes.Interface) (record.EventBroadcaster, record.EventRecorder, error) {
	scheme := runtime.NewScheme()
	if err := wfv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	events := record.NewBroadcaster(record.WithContext(context.Background()))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return events, events.NewRecorder(scheme, corev1.EventSource{Component: "wfguard-bench-raw"}), nil
}

func rawWorkflow(ctx context.Context, kube kubernetes.Interface, argo versioned.Interface, obs *observer, wf *wfv1.Workflow) error {
	ns := obs.namespace
	wfs := argo.ArgoprojV1alpha1().Workflows(ns)
	wf, err := wfs.Create(ctx, wf, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("raw: creating workflow: %w", err)
	}
	step := workload.StepTemplate()
	wf.Status.Phase = wfv1.WorkflowRunning
	wf.Status.Nodes = wfv1.Nodes{}
	for k, task := range wf.Spec.Templates[0].DAG.Tasks {
		nodeName := wf.Name + "." + task.Name
		nodeID := fmt.Sprintf("%s-%d", wf.Name, k)
		tmpl := step.DeepCopy()
		tmpl.Inputs.Parameters[0].Value = wfv1.AnyStringPtr("ok")
		pod, err := podspec.Build(podspec.Input{Workflow: wf, NodeName: nodeName, NodeID: nodeID, Template: tmpl,
			Now: time.Now(), StatusFinalizer: true})
		if err != nil {
			return fmt.Errorf("raw: building pod for %s: %w", nodeName, err)
		}
		pod, err = kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("raw: creating pod for %s: %w", nodeName, err)
		}
		if err := obs.waitNode(ctx, nodeID); err != nil {
			return err
		}
		wf.Status.Nodes[nodeID] = wfv1.NodeStatus{ID: nodeID, Name: nodeName, Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded,
			Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: workload.OutputParameter, Value: wfv1.AnyStringPtr("ok")}}}}
		if wf, err = wfs.Update(ctx, wf, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("raw: recording node %s: %w", nodeName, err)
		}
		if err := removeFinalizer(ctx, kube, ns, pod.Name, pod.UID); err != nil {
			return err
		}
	}
	wf.Status.Phase = wfv1.WorkflowSucceeded
	wf.Labels = map[string]string{common.LabelKeyCompleted: "true"}
	if _, err := wfs.Update(ctx, wf, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("raw: completing workflow %s: %w", wf.Name, err)
	}
	return nil
}

// removeFinalizer drops the status finalizer with one merge patch guarded by the pod's UID; benchmark pods
// carry no other finalizer.
func removeFinalizer(ctx context.Context, kube kubernetes.Interface, ns, name string, uid types.UID) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{}, "uid": uid}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("raw: removing %s from pod %s/%s: %w", podfinalizer.Finalizer, ns, name, err)
	}
	return nil
}
