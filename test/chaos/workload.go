package chaos

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// shape builds one workflow and returns each node's dependencies by node name.
type shape func(name string) (*wfv1.Workflow, map[string][]string)

func dag(name string, edges [][2]string, tasks ...string) (*wfv1.Workflow, map[string][]string) {
	deps := map[string][]string{}
	byTask := map[string][]string{}
	for _, e := range edges {
		byTask[e[1]] = append(byTask[e[1]], e[0])
		deps[name+"."+e[1]] = append(deps[name+"."+e[1]], name+"."+e[0])
	}
	var list []wfv1.DAGTask
	for _, t := range tasks {
		task := wfv1.DAGTask{Name: t, Template: "step", Dependencies: byTask[t]}
		if len(byTask[t]) > 0 {
			task.Arguments = workload.Consume("tasks", byTask[t][0])
		}
		list = append(list, task)
	}
	return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: wfv1.WorkflowSpec{Entrypoint: "main",
		Templates: []wfv1.Template{{Name: "main", DAG: &wfv1.DAGTemplate{Tasks: list}}, workload.StepTemplate()}}}, deps
}

var shapes = []shape{
	func(n string) (*wfv1.Workflow, map[string][]string) { // chain
		return dag(n, [][2]string{{"a", "b"}, {"b", "c"}}, "a", "b", "c")
	},
	func(n string) (*wfv1.Workflow, map[string][]string) { // fan-out
		return dag(n, [][2]string{{"root", "c0"}, {"root", "c1"}, {"root", "c2"}, {"root", "c3"}}, "root", "c0", "c1", "c2", "c3")
	},
	func(n string) (*wfv1.Workflow, map[string][]string) { // diamond
		return dag(n, [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}}, "a", "b", "c", "d")
	},
	func(n string) (*wfv1.Workflow, map[string][]string) { // steps: [[a], [b, c]]
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: wfv1.WorkflowSpec{Entrypoint: "main",
			Templates: []wfv1.Template{{Name: "main", Steps: []wfv1.ParallelSteps{
				{Steps: []wfv1.WorkflowStep{{Name: "a", Template: "step"}}},
				{Steps: []wfv1.WorkflowStep{{Name: "b", Template: "step", Arguments: workload.Consume("steps", "a")}, {Name: "c", Template: "step", Arguments: workload.Consume("steps", "a")}}},
			}}, workload.StepTemplate()}}}
		first := n + "[0].a"
		return wf, map[string][]string{n + "[1].b": {first}, n + "[1].c": {first}}
	},
}

// behaviour gives each pod its seeded fate (dealt).
func behaviour(seed uint64) simnode.Script {
	return simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior { return dealt(seed, info.Pod.Namespace, info.Pod.Name) }}
}

// dealt is one pod's seeded fate: most succeed after a short run, some fail, report late, never report, are
// evicted or deleted by a third party. It depends only on the seed and the pod's name, so the oracle can
// deal it again after the run.
func dealt(seed uint64, ns, pod string) simnode.Behavior {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", seed, ns, pod)
	r := rand.New(rand.NewPCG(h.Sum64(), seed))
	b := simnode.Behavior{Parameters: map[string]string{workload.OutputParameter: "ok"}, RunFor: time.Duration(r.IntN(300)) * time.Millisecond}
	switch x := r.IntN(100); {
	case x < 6:
		b.ExitCode = 1
	case x < 14:
		b.Fault.ResultDelay = time.Duration(200+r.IntN(1300)) * time.Millisecond
	case x < 16:
		b.Fault.NoResult = true
	case x < 18:
		b.Fault.Evict = true
	case x < 20:
		b.Fault.DeleteWhileRunning = true
	}
	return b
}
