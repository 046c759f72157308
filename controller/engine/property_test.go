package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// recordingPods is a PodControl that remembers what the engine created, and when, and what it stopped.
type recordingPods struct {
	mu      sync.Mutex
	created map[string]*corev1.Pod // by node ID
	order   []string
	stopped []string // node IDs
}

func (r *recordingPods) CreatePod(_ context.Context, pod *corev1.Pod) error {
	r.mu.Lock() // a pass creates its pods concurrently
	defer r.mu.Unlock()
	id := pod.Annotations[common.AnnotationKeyNodeID]
	if _, ok := r.created[id]; !ok {
		r.created[id] = pod
		r.order = append(r.order, id)
	}
	return nil
}
func (r *recordingPods) StopPod(_ context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, pod.Annotations[common.AnnotationKeyNodeID])
	return nil
}
func (r *recordingPods) DeletePod(context.Context, *corev1.Pod) error { return nil }

const chain = `
metadata: {name: chain, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: produce}
    - - {name: b, template: consume, arguments: {parameters: [{name: in, value: "{{steps.a.outputs.parameters.out}}"}]}}
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo v > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: consume
    inputs: {parameters: [{name: in}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.in}}"]}
`

// world is what the API server holds for node a, written in argoexec's order; the cache sees each
// stream (pod, result) as a prefix of it, the two streams interleaved arbitrarily.
type world struct {
	podStates    []corev1.PodPhase          // Pending, Running, Succeeded
	resultStates []*wfv1.WorkflowTaskResult // nil (absent), placeholder, outputs, complete
}

func TestNoInterleavingOfPodAndResultEventsBreaksI1OrI2(t *testing.T) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("WFGUARD_TEST_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	defer func() {
		if t.Failed() {
			t.Logf("WFGUARD_TEST_SEED=%d reproduces this run", seed)
		}
	}()
	for run := range 300 {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(chain), wf); err != nil {
			t.Fatal(err)
		}
		pods := &recordingPods{created: map[string]*corev1.Pod{}}
		e := &Engine{Pods: pods}
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		ext := &extstatus.Extensions{}
		aID := wf.NodeID("chain[0].a")
		result := func(label string, withOutputs bool) *wfv1.WorkflowTaskResult {
			r := &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Name: aID, Namespace: wf.Namespace,
				Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: label, common.LabelKeyWorkflow: wf.Name},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: wf.UID}}}}
			if withOutputs {
				r.Outputs = &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}}
			}
			return r
		}
		w := world{
			podStates:    []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded},
			resultStates: []*wfv1.WorkflowTaskResult{nil, result("false", false), result("false", true), result("true", true)},
		}
		// The true history: the pod succeeds only after the result is complete. The cache delivers each
		// stream in order but interleaves them at random: podSeen/resultSeen are how far it has got.
		podSeen, resultSeen := -1, 0
		for step := 0; step < 40; step++ {
			switch {
			case podSeen < len(w.podStates)-1 && (resultSeen == len(w.resultStates)-1 || rng.IntN(2) == 0):
				podSeen++
			case resultSeen < len(w.resultStates)-1:
				resultSeen++
			}
			now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			p := &Pass{WF: wf, Ext: ext, Now: now.Truncate(time.Second), Pods: map[string]*corev1.Pod{},
				TaskResultTimeout: time.Hour}
			if pod, ok := pods.created[aID]; ok && podSeen >= 0 {
				seen := pod.DeepCopy()
				seen.Status.Phase = w.podStates[podSeen]
				if seen.Status.Phase == corev1.PodSucceeded {
					seen.Status.ContainerStatuses = []corev1.ContainerStatus{
						{Name: "wait", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
						{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
				}
				p.Pods[aID] = seen
			}
			var results []*wfv1.WorkflowTaskResult
			if r := w.resultStates[resultSeen]; r != nil {
				results = append(results, r)
			}
			taskresult.Merge(p.WF, results, p.Pods)
			p.Results = taskresult.Owned(p.WF, results, p.Pods)
			AssessNodes(p)
			if _, err := e.Start(p); err != nil {
				t.Fatal(err)
			}
			if err := e.Execute(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			a := p.node("chain[0].a")
			// I1: a is Succeeded only with its complete result merged.
			if a != nil && a.Phase == wfv1.NodeSucceeded && (!taskresult.Synced(a) || a.Outputs == nil || len(a.Outputs.Parameters) == 0) {
				t.Fatalf("run %d step %d: I1 violated: a Succeeded with outputs %v (pod seen %d, result seen %d)", run, step, a.Outputs, podSeen, resultSeen)
			}
			// I8: no pod is created with an unresolved {{...outputs...}} reference.
			for _, pod := range pods.created {
				if err := refuseUnresolvedOutputs(pod); err != nil {
					t.Fatalf("run %d step %d: I8 violated: %v", run, step, err)
				}
			}
			// I2: b's pod exists only once a is fulfilled, and it carries a's value.
			bID := wf.NodeID("chain[1].b")
			if pod, ok := pods.created[bID]; ok {
				if !fulfilled(a) {
					t.Fatalf("run %d step %d: I2 violated: b created while a is %s synced=%v", run, step, a.Phase, taskresult.Synced(a))
				}
				if !slices.Contains(pod.Spec.Containers[1].Args, "v") && !slices.Contains(pod.Spec.Containers[1].Command, "v") {
					t.Fatalf("run %d: b's pod lacks a's value: %v %v", run, pod.Spec.Containers[1].Command, pod.Spec.Containers[1].Args)
				}
			}
		}
		if a := p0(wf, "chain[0].a"); a == nil || a.Phase != wfv1.NodeSucceeded {
			t.Fatalf("run %d: once everything is seen, a must succeed; got %+v", run, a)
		}
		if _, ok := pods.created[wf.NodeID("chain[1].b")]; !ok {
			t.Fatalf("run %d: b never started", run)
		}
	}
}

func p0(wf *wfv1.Workflow, name string) *wfv1.NodeStatus {
	n, ok := wf.Status.Nodes[wf.NodeID(name)]
	if !ok {
		return nil
	}
	return &n
}
