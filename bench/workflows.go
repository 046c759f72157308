package bench

import (
	"fmt"
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// stepScript makes every simulated pod report its output parameter.
func stepScript() simnode.Script {
	return simnode.Script{Default: simnode.Behavior{Parameters: map[string]string{workload.OutputParameter: "ok"}}}
}

func dagWorkflow(name string, tasks []wfv1.DAGTask) *wfv1.Workflow {
	return &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{
			{Name: "main", DAG: &wfv1.DAGTemplate{Tasks: tasks}}, workload.StepTemplate()}},
	}
}

// chainWorkflow is t0 → t1 → ... → t(n-1), each consuming its predecessor's output.
func chainWorkflow(name string, n int) *wfv1.Workflow {
	tasks := []wfv1.DAGTask{{Name: "t0", Template: "step"}}
	for i := 1; i < n; i++ {
		prev := fmt.Sprintf("t%d", i-1)
		tasks = append(tasks, wfv1.DAGTask{Name: fmt.Sprintf("t%d", i), Template: "step", Dependencies: []string{prev}, Arguments: workload.Consume("tasks", prev)})
	}
	return dagWorkflow(name, tasks)
}

// fanOutWorkflow is root → c0..c(width-1), each consuming root's output.
func fanOutWorkflow(name string, width int) *wfv1.Workflow {
	tasks := []wfv1.DAGTask{{Name: "root", Template: "step"}}
	for i := range width {
		tasks = append(tasks, wfv1.DAGTask{Name: fmt.Sprintf("c%d", i), Template: "step", Dependencies: []string{"root"}, Arguments: workload.Consume("tasks", "root")})
	}
	return dagWorkflow(name, tasks)
}

// predecessor names the node a benchmark node waited for: "wf.t3" → "wf.t2", "wf.c4" → "wf.root".
func predecessor(nodeName string) (string, bool) {
	dot := strings.LastIndexByte(nodeName, '.')
	if dot < 0 {
		return "", false
	}
	wf, task := nodeName[:dot], nodeName[dot+1:]
	switch {
	case strings.HasPrefix(task, "c"):
		return wf + ".root", true
	case strings.HasPrefix(task, "t"):
		i, err := strconv.Atoi(task[1:])
		if err != nil || i == 0 {
			return "", false
		}
		return fmt.Sprintf("%s.t%d", wf, i-1), true
	}
	return "", false
}
