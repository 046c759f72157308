package clientstatus

import (
	"fmt"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// BenchmarkUpdateOfAFanOut is what each write of a fan-out pays for the client status (argo's progress and
// resource sums over every node): of 50 pods, and of docs/performance.md's 10,000.
func BenchmarkUpdateOfAFanOut(b *testing.B) {
	for _, pods := range []int{50, 10000} {
		b.Run(fmt.Sprint(pods), func(b *testing.B) { benchmarkUpdate(b, pods) })
	}
}

func benchmarkUpdate(b *testing.B, pods int) {
	synced := true
	group := wfv1.NodeStatus{ID: "g", Name: "wf[0]", Type: wfv1.NodeTypeStepGroup, Phase: wfv1.NodeRunning}
	nodes := []wfv1.NodeStatus{{ID: "wf", Name: "wf", Type: wfv1.NodeTypeSteps, Phase: wfv1.NodeRunning, Children: []string{"g"}}}
	for i := range pods {
		id := fmt.Sprintf("p%d", i)
		group.Children = append(group.Children, id)
		nodes = append(nodes, wfv1.NodeStatus{ID: id, Name: "wf[0].p(" + id + ")", Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded,
			TaskResultSynced: &synced, ResourcesDuration: wfv1.ResourcesDuration{"cpu": 1, "memory": 1}})
	}
	wf := workflowOf(append(nodes, group)...)
	b.ReportAllocs()
	for b.Loop() {
		Update(wf, nil, true)
	}
}
