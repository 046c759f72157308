package simnode_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/sandbox/simnode"
)

// TestEveryPathThroughAPodsLifeIsJournaledInOrder pins the whole journal of each way a pod's run can go:
// every fault, every test gate, a deletion at each stage a kubelet serves it and the active deadline.
func TestEveryPathThroughAPodsLifeIsJournaledInOrder(t *testing.T) {
	out := map[string]string{"out": "x"}
	opened := make(chan struct{})
	close(opened)
	cases := []struct {
		name     string
		behavior func() simnode.Behavior
		// act, when set, does what the case is about once the pod is running: a deletion or a deadline.
		act  func(e *env, pod *corev1.Pod)
		want []string
	}{
		{
			name:     "main exits 1: outputs reported, result finalized, the pod fails",
			behavior: func() simnode.Behavior { return simnode.Behavior{ExitCode: 1, Parameters: out} },
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepFailed},
		},
		{
			name: "the wait container exits non-zero: no outputs reported, result finalized, the pod fails",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, Fault: simnode.Fault{WaitExitCode: 2}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepFailed},
		},
		{
			name: "no result: nothing written, the pod succeeds",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, Fault: simnode.Fault{NoResult: true}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultNotCreated, simnode.StepMainExited,
				simnode.StepWaitExited, simnode.StepSucceeded},
		},
		{
			name: "never finalized: outputs reported, the pod succeeds",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, Fault: simnode.Fault{NeverFinalize: true}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepOutputsReported, simnode.StepWaitExited, simnode.StepSucceeded},
		},
		{
			name: "outputs lost: the result is finalized without them, the pod succeeds",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, Fault: simnode.Fault{LoseOutputs: true}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepResultLost, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepSucceeded},
		},
		{
			name:     "a missing output: the executor errs, reports the rest and finalizes, the pod fails",
			behavior: func() simnode.Behavior { return simnode.Behavior{} },
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepExecutorError, simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepFailed},
		},
		{
			name: "evicted half-way through main, after the placeholder",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{RunFor: 20 * time.Millisecond, Fault: simnode.Fault{Evict: true}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated,
				simnode.StepEvicted, simnode.StepFailed},
		},
		{
			name: "every test gate already open: the healthy run",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, Hold: opened, HoldBeforeResult: opened, HoldAfterReport: opened}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepSucceeded},
		},
		{
			name: "deleted by a third party half-way through main: the result is finalized, the kubelet kills it",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{RunFor: 100 * time.Millisecond, Fault: simnode.Fault{DeleteWhileRunning: true}}
			},
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated,
				simnode.StepDeletedByOther, simnode.StepResultFinalized, simnode.StepKilled, simnode.StepDeleteFinalized},
		},
		{
			name:     "deleted while main is held: the result is finalized, the kubelet kills it",
			behavior: func() simnode.Behavior { return simnode.Behavior{Parameters: out, Hold: make(chan struct{})} },
			act:      deleteAfter(simnode.StepResultCreated),
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated,
				simnode.StepResultFinalized, simnode.StepKilled, simnode.StepDeleteFinalized},
		},
		{
			name: "deleted while the wait container is held after its report: the kubelet kills it",
			behavior: func() simnode.Behavior {
				return simnode.Behavior{Parameters: out, HoldAfterReport: make(chan struct{})}
			},
			act: deleteAfter(simnode.StepResultFinalized),
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepKilled, simnode.StepDeleteFinalized},
		},
		{
			name:     "deleted after it succeeded: nothing left to kill",
			behavior: func() simnode.Behavior { return simnode.Behavior{Parameters: out} },
			act:      deleteAfter(simnode.StepSucceeded),
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated, simnode.StepMainExited,
				simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepSucceeded,
				simnode.StepDeleteFinalized},
		},
		{
			name:     "an active deadline set while main runs: the result is finalized, the pod fails",
			behavior: func() simnode.Behavior { return simnode.Behavior{Parameters: out, RunFor: time.Minute} },
			act:      deadlineAfter(simnode.StepResultCreated),
			want: []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated,
				simnode.StepResultFinalized, simnode.StepDeadlineExceeded, simnode.StepFailed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, simnode.Options{Script: simnode.Script{Default: tc.behavior()}})
			// The finalizer keeps a deleted pod, so its removal never races the journal's last step.
			pod := e.createPod("wf.produce", outputsTemplate, false, true)
			if tc.act != nil {
				tc.act(e, pod)
			}
			last := tc.want[len(tc.want)-1]
			if err := e.node.WaitForStep(t.Context(), e.ns, pod.Name, last); err != nil {
				t.Fatal(err)
			}
			if got := e.node.Journal(e.ns, pod.Name); !slices.Equal(got, tc.want) {
				t.Errorf("journal = %v, want %v", got, tc.want)
			}
		})
	}
}

// deleteAfter deletes the pod, as a user would, once its journal holds step.
func deleteAfter(step string) func(e *env, pod *corev1.Pod) {
	return func(e *env, pod *corev1.Pod) {
		e.t.Helper()
		if err := e.node.WaitForStep(e.t.Context(), e.ns, pod.Name, step); err != nil {
			e.t.Fatal(err)
		}
		if err := e.kube.CoreV1().Pods(e.ns).Delete(e.t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// deadlineAfter gives the pod an activeDeadlineSeconds of 1 once its journal holds step.
func deadlineAfter(step string) func(e *env, pod *corev1.Pod) {
	return func(e *env, pod *corev1.Pod) {
		e.t.Helper()
		if err := e.node.WaitForStep(e.t.Context(), e.ns, pod.Name, step); err != nil {
			e.t.Fatal(err)
		}
		patch := []byte(`{"spec":{"activeDeadlineSeconds":1}}`)
		if _, err := e.kube.CoreV1().Pods(e.ns).Patch(e.t.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}
