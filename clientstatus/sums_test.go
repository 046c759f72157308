package clientstatus

import (
	"fmt"
	"math/rand/v2"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/resource"
	"github.com/argoproj/argo-workflows/v3/workflow/progress"
	corev1 "k8s.io/api/core/v1"
)

// randomWorkflow is a workflow of up to 40 nodes of every type and phase, children pointing anywhere
// (shared descendants, cycles, missing nodes), with progress and resource durations argo's own functions
// accept without panicking: no progress, a valid one, or (not on a pod node, whose invalid progress argo's
// pod assessment resets first) one with '/' that is not valid.
func randomWorkflow(r *rand.Rand) *wfv1.Workflow {
	types := []wfv1.NodeType{wfv1.NodeTypePod, wfv1.NodeTypeContainer, wfv1.NodeTypeSuspend, wfv1.NodeTypeHTTP, wfv1.NodeTypeSteps,
		wfv1.NodeTypeStepGroup, wfv1.NodeTypeDAG, wfv1.NodeTypeTaskGroup, wfv1.NodeTypeRetry, wfv1.NodeTypeSkipped}
	phases := []wfv1.NodePhase{wfv1.NodePending, wfv1.NodeRunning, wfv1.NodeSucceeded, wfv1.NodeSkipped, wfv1.NodeFailed, wfv1.NodeError, wfv1.NodeOmitted}
	progresses := []wfv1.Progress{"", "", "0/1", "3/10", "7/7", "0/3"}
	count := 1 + r.IntN(40)
	wf := workflowOf()
	for i := range count {
		n := wfv1.NodeStatus{ID: fmt.Sprintf("n%d", i), Name: fmt.Sprintf("wf.n%d", i), Type: types[r.IntN(len(types))], Phase: phases[r.IntN(len(phases))]}
		n.Progress = progresses[r.IntN(len(progresses))]
		if n.Type != wfv1.NodeTypePod && r.IntN(8) == 0 {
			n.Progress = "5/2"
		}
		if r.IntN(3) > 0 {
			n.ResourcesDuration = wfv1.ResourcesDuration{corev1.ResourceCPU: wfv1.ResourceDuration(r.IntN(9))}
			if r.IntN(2) == 0 {
				n.ResourcesDuration[corev1.ResourceMemory] = wfv1.ResourceDuration(r.IntN(9))
			}
		}
		for range r.IntN(4) {
			n.Children = append(n.Children, fmt.Sprintf("n%d", r.IntN(count+2))) // n(count) and n(count+1) do not exist
		}
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

// The sums are argo's: on random node graphs they give what argo's progress.UpdateProgress and
// resource.UpdateResourceDurations give, in the same words.
func TestTheSumsAreArgosOnRandomNodeGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 1))
	for i := range 500 {
		wf := randomWorkflow(r)
		argo := wf.DeepCopy()
		progress.UpdateProgress(argo)
		resource.UpdateResourceDurations(argo)
		updateProgress(wf)
		updateResourceDurations(wf)
		if wf.Status.Progress != argo.Status.Progress || !sameDurations(wf.Status.ResourcesDuration, argo.Status.ResourcesDuration) {
			t.Fatalf("graph %d: workflow progress %q resources %v, argo %q %v", i, wf.Status.Progress, wf.Status.ResourcesDuration, argo.Status.Progress, argo.Status.ResourcesDuration)
		}
		for id, want := range argo.Status.Nodes {
			got := wf.Status.Nodes[id]
			if got.Progress != want.Progress || !sameDurations(got.ResourcesDuration, want.ResourcesDuration) {
				t.Fatalf("graph %d node %s (%s %s): progress %q resources %v, argo %q %v", i, id, want.Type, want.Phase,
					got.Progress, got.ResourcesDuration, want.Progress, want.ResourcesDuration)
			}
		}
	}
}
