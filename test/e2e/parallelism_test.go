package e2e_test

import (
	"context"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// runningWatch follows every pod event of the namespace and records, per workflow, the most pods that
// were not yet Succeeded or Failed at any one time.
type runningWatch struct {
	mu   sync.Mutex
	peak map[string]int
	stop func()
}

func (e *env) watchRunning() *runningWatch {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.Kube.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	rw := &runningWatch{peak: map[string]int{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		live := map[string]map[string]bool{} // workflow → pods not ended
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			wf := pod.Labels[common.LabelKeyWorkflow]
			if live[wf] == nil {
				live[wf] = map[string]bool{}
			}
			ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || ev.Type == watch.Deleted
			if ended {
				delete(live[wf], pod.Name)
			} else {
				live[wf][pod.Name] = true
			}
			rw.mu.Lock()
			rw.peak[wf] = max(rw.peak[wf], len(live[wf]))
			rw.mu.Unlock()
		}
	}()
	rw.stop = func() { w.Stop(); cancel(); wg.Wait() }
	e.t.Cleanup(rw.stop)
	return rw
}

func (rw *runningWatch) peakOf(wf string) int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.peak[wf]
}

func TestParallelismTwoNeverRunsMoreThanTwoPods(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	pods := e.watchRunning()
	for _, tc := range []struct{ sentence, manifest string }{
		{"workflow-level parallelism bounds a steps fan-out", `
metadata: {name: wf-level}
spec:
  entrypoint: main
  parallelism: 2
  templates:
  - name: main
    steps: [[{name: work, template: work, withSequence: {count: "10"}}]]
  - name: work
    metadata: {annotations: {simnode.wfguard.io/run-for: 300ms}}
    container: {image: alpine, command: ["true"]}
`},
		{"template-level parallelism bounds a DAG fan-out", `
metadata: {name: tmpl-level}
spec:
  entrypoint: main
  templates:
  - name: main
    parallelism: 2
    dag:
      tasks:
      - {name: work, template: work, withSequence: {count: "10"}}
  - name: work
    metadata: {annotations: {simnode.wfguard.io/run-for: 300ms}}
    container: {image: alpine, command: ["true"]}
`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(tc.manifest)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
			}
			succeeded := 0
			for _, n := range done.Status.Nodes {
				if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeSucceeded {
					succeeded++
				}
			}
			if succeeded != 10 {
				t.Errorf("%d pods succeeded, want 10\n%s", succeeded, harness.Describe(done))
			}
			// The watch has seen every pod end by now: their nodes completed from those very states.
			if peak := pods.peakOf(wf.Name); peak != 2 {
				t.Errorf("at most %d pods were running at once, want exactly 2 (the limit, reached)", peak)
			}
		})
	}
}
