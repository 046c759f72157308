package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/taskresult"
)

// Benchmarks of the pure hot path of a pass: node assessment, DAG evaluation and template substitution.
// Run with `go test -run '^$' -bench . -benchmem ./controller/engine/` (benchstat-friendly output).

type podSink struct {
	mu      sync.Mutex // a pass creates its pods concurrently
	created map[string]*corev1.Pod
}

func (s *podSink) CreatePod(_ context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created[pod.Annotations[common.AnnotationKeyNodeID]] = pod
	return nil
}
func (s *podSink) StopPod(context.Context, *corev1.Pod) error   { return nil }
func (s *podSink) DeletePod(context.Context, *corev1.Pod) error { return nil }

// fanOut is a DAG root → n children, each consuming root's output.
func fanOut(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: fan, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}\nspec:\n  entrypoint: main\n  templates:\n  - name: main\n    dag:\n      tasks:\n      - {name: root, template: step}\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {name: c%d, template: step, dependencies: [root], arguments: {parameters: [{name: in, value: \"{{tasks.root.outputs.parameters.out}}\"}]}}\n", i)
	}
	b.WriteString(stepYAML)
	return b.String()
}

// chain is steps s0 → s1 → ... each consuming the previous output: substitution on every step.
func chain(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: chain, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}\nspec:\n  entrypoint: main\n  arguments: {parameters: [{name: g, value: global}]}\n  templates:\n  - name: main\n    steps:\n    - - {name: s0, template: step}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "    - - {name: s%d, template: step, arguments: {parameters: [{name: in, value: \"{{steps.s%d.outputs.parameters.out}}-{{workflow.parameters.g}}\"}]}}\n", i, i-1)
	}
	b.WriteString(stepYAML)
	return b.String()
}

const stepYAML = `  - name: step
    inputs: {parameters: [{name: in, default: ""}]}
    container: {image: alpine, command: [sh, -c, "echo {{inputs.parameters.in}} > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`

// world drives a workflow: every pod the engine created has succeeded with a complete result.
type world struct {
	wf      *wfv1.Workflow
	ext     *extstatus.Extensions
	eng     *engine.Engine
	pods    *podSink
	now     time.Time
	results []*wfv1.WorkflowTaskResult
}

func newWorld(b *testing.B, manifest string) *world {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		b.Fatal(err)
	}
	pods := &podSink{created: map[string]*corev1.Pod{}}
	return &world{wf: wf, ext: &extstatus.Extensions{}, eng: &engine.Engine{Pods: pods}, pods: pods, now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

// pass runs one reconcile pass on wf as the controller does after loading it.
func (w *world) pass(b *testing.B, wf *wfv1.Workflow) {
	p := &engine.Pass{WF: wf, Ext: w.ext, Now: w.now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
	for id, pod := range w.pods.created {
		p.Pods[id] = pod
	}
	taskresult.Merge(p.WF, w.results, p.Pods)
	p.Results = taskresult.Owned(p.WF, w.results, p.Pods)
	engine.AssessNodes(p)
	if _, err := w.eng.Start(p); err != nil {
		b.Fatal(err)
	}
	if err := w.eng.Execute(context.Background(), p); err != nil {
		b.Fatal(err)
	}
}

// finishPods marks every created pod Succeeded with a complete result, as argoexec and the kubelet would.
func (w *world) finishPods() {
	w.results = w.results[:0]
	for id, pod := range w.pods.created {
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "wait", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
			{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
		w.results = append(w.results, &wfv1.WorkflowTaskResult{
			ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: w.wf.Namespace,
				Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: "true", common.LabelKeyWorkflow: w.wf.Name},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: types.UID(w.wf.UID)}}},
			NodeResult: wfv1.NodeResult{Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}}},
		})
	}
}

// advance runs passes, finishing pods between them, until the workflow has created want pods.
func (w *world) advance(b *testing.B, want int) {
	for range 10 * (want + 2) {
		if len(w.pods.created) >= want {
			return
		}
		w.pass(b, w.wf)
		w.finishPods()
		w.now = w.now.Add(time.Second)
	}
	b.Fatalf("workflow created %d pods, want %d", len(w.pods.created), want)
}

// BenchmarkPassFanOutResults is the pass after a fan-out's children all finished: assess n pods, merge n
// results and evaluate the DAG that completes the workflow.
func BenchmarkPassFanOutResults(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			w := newWorld(b, fanOut(n))
			w.advance(b, n+1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.pass(b, w.wf.DeepCopy())
			}
		})
	}
}

// BenchmarkPassParameterChain is a pass over a steps chain where each step substitutes the previous output
// and a global parameter: template substitution dominates.
func BenchmarkPassParameterChain(b *testing.B) {
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			w := newWorld(b, chain(n))
			w.advance(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.pass(b, w.wf.DeepCopy())
			}
		})
	}
}

// BenchmarkPassRunningDAG is the most common pass: a DAG chain whose current pod still runs, so the pass
// decides nothing; the DAG template is resolved again all the same.
func BenchmarkPassRunningDAG(b *testing.B) {
	w := newWorld(b, dagChain(5))
	w.advance(b, 3) // t0, t1 done; t2's pod created and not finished
	for _, pod := range w.pods.created {
		if pod.Status.Phase != corev1.PodSucceeded {
			pod.Status.Phase = corev1.PodRunning
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.pass(b, w.wf.DeepCopy())
	}
}

// dagChain is the throughput bench's workflow: t0 → t1 → ... each consuming its predecessor's output.
func dagChain(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: dagchain, namespace: ns, uid: 44444444-4444-4444-4444-444444444444}\nspec:\n  entrypoint: main\n  templates:\n  - name: main\n    dag:\n      tasks:\n      - {name: t0, template: step}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "      - {name: t%d, template: step, dependencies: [t%d], arguments: {parameters: [{name: in, value: \"{{tasks.t%d.outputs.parameters.out}}\"}]}}\n", i, i-1, i-1)
	}
	b.WriteString(stepYAML)
	return b.String()
}

// BenchmarkAssessNodes is node assessment alone: n pod nodes whose pods succeeded, results merged.
func BenchmarkAssessNodes(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w := newWorld(b, fanOut(n))
			w.advance(b, n+1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p := &engine.Pass{WF: w.wf.DeepCopy(), Ext: w.ext, Now: w.now, Pods: w.pods.created, TaskResultTimeout: time.Hour}
				taskresult.Merge(p.WF, w.results, p.Pods)
				p.Results = taskresult.Owned(p.WF, w.results, p.Pods)
				engine.AssessNodes(p)
			}
		})
	}
}
