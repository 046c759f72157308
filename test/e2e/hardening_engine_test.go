package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// holdFinalizer is a test's own finalizer: it keeps the earlier workflow's pod there until the test lets go.
const holdFinalizer = "e2e.wfguard.io/hold"

const single = `
metadata: {name: again}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: only, template: work}
  - name: work
    container: {image: alpine, command: [echo, hi]}
`

// Issue #14 item 5: a workflow deleted and created again under the same name must wait for the earlier
// incarnation's pod to go (it holds the status finalizer until the orphan path releases it), not fail.
func TestAWorkflowRecreatedUnderTheSameNameWaitsForTheEarlierPodToGo(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		// release: the test lets the earlier pod go once the new node says it is waiting.
		release   bool
		wait      time.Duration
		wantPhase wfv1.WorkflowPhase
	}{
		{"the recreated workflow waits, saying why, and succeeds once the earlier pod is gone", true, 0, wfv1.WorkflowSucceeded},
		{"an earlier pod that never goes fails the node after the wait, naming the pod", false, 3 * time.Second, wfv1.WorkflowFailed},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			hold := make(chan struct{})
			e := newEnv(t, envOptions{oldPodWait: tc.wait, script: simnode.Script{Default: simnode.Behavior{Hold: hold}}})
			released := false
			release := func() {
				if !released {
					released = true
					close(hold)
				}
			}
			t.Cleanup(release)
			old := e.Submit(single)
			running := e.WaitFor(old.Name, "running its pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, "again[0].only")
				return n != nil && n.Phase == wfv1.NodeRunning
			})
			oldPod := e.PodOf(running, "again[0].only")
			// Keep the earlier pod until the test says so, whatever the controller and the garbage collector do.
			e.patchPod(oldPod.Name, fmt.Sprintf(`{"metadata":{"finalizers":[%q,%q]}}`, "workflows.argoproj.io/status", holdFinalizer))
			t.Cleanup(func() { e.dropFinalizer(oldPod.Name, holdFinalizer) })

			if err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Delete(t.Context(), old.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Fatalf("the deleted workflow never went: %v", err)
			}
			// The control plane here runs no garbage collector: delete what it would (the owner is gone),
			// the earlier pod and task result. The status finalizer and the test's keep the pod Terminating.
			if err := e.Kube.CoreV1().Pods(e.Namespace).Delete(t.Context(), oldPod.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			again := e.Submit(single) // as soon as GET says 404
			if again.UID == old.UID {
				t.Fatal("the recreated workflow has the old UID")
			}
			waiting := e.WaitFor(again.Name, "waiting for the earlier pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
				n := harness.NodeByName(wf, "again[0].only")
				return wf.UID == again.UID && n != nil && n.Phase == wfv1.NodePending && strings.HasPrefix(n.Message, engine.WaitingForOldPodPrefix)
			})
			if msg := harness.NodeByName(waiting, "again[0].only").Message; !strings.Contains(msg, oldPod.Name) || !strings.Contains(msg, string(old.UID)) {
				t.Errorf("waiting message %q should name the pod %s and the old UID %s", msg, oldPod.Name, old.UID)
			}
			e.WaitEvent("", again.Name, engine.ReasonNodeWaitingForOldPod)
			if tc.release {
				e.dropFinalizer(oldPod.Name, holdFinalizer)
				e.WaitFor(again.Name, "running its own pod", 30*time.Second, func(wf *wfv1.Workflow) bool {
					n := harness.NodeByName(wf, "again[0].only")
					return n != nil && n.Phase == wfv1.NodeRunning
				})
				release()
			}
			done := e.WaitCompleted(again.Name)
			if done.UID != again.UID || done.Status.Phase != tc.wantPhase {
				t.Fatalf("recreated workflow ended %s, want %s\n%s", done.Status.Phase, tc.wantPhase, harness.Describe(done))
			}
			n := harness.NodeByName(done, "again[0].only")
			if tc.release {
				if pod := e.PodOf(done, "again[0].only"); pod.Labels[podspec.LabelWorkflowUID] != string(again.UID) {
					t.Errorf("the node ran pod of UID %s, want its own %s", pod.Labels[podspec.LabelWorkflowUID], again.UID)
				}
				return
			}
			if n.Phase != wfv1.NodeError || !strings.Contains(n.Message, oldPod.Name) || !strings.Contains(n.Message, "was still there after 3s") {
				t.Errorf("node = %s %q, want Error naming the pod and the wait", n.Phase, n.Message)
			}
		})
	}
}

func (e *env) patchPod(name, patch string) {
	e.t.Helper()
	if _, err := e.Kube.CoreV1().Pods(e.Namespace).Patch(e.t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patching pod %s: %v", name, err)
	}
}

// dropFinalizer removes one finalizer from a pod, if the pod is still there.
func (e *env) dropFinalizer(name, finalizer string) {
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := e.Kube.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		var keep []string
		for _, f := range pod.Finalizers {
			if f != finalizer {
				keep = append(keep, f)
			}
		}
		if len(keep) == len(pod.Finalizers) {
			return true, nil
		}
		pod.Finalizers = keep
		_, err = e.Kube.CoreV1().Pods(e.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		e.t.Errorf("removing finalizer %s from pod %s: %v", finalizer, name, err)
	}
}

const lostOutputs = `
metadata: {name: lost%s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: s1, template: produce}
    - - {name: s2, template: consume, arguments: {parameters: [{name: in, value: "{{steps.s1.outputs.parameters.out}}"}]}}
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo v > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out%s}}]}
  - name: consume
    inputs: {parameters: [{name: in}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.in}}"]}
`

// Issue #14 item 6: a finalized result without the declared output must not let its node succeed, and no
// pod may run with the literal {{steps.s1.outputs.parameters.out}}.
func TestAFinalizedResultWithoutTheDeclaredOutputFailsLoudly(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "v"}, Fault: simnode.Fault{LoseOutputs: true}}}}})
	for _, tc := range []struct {
		sentence, suffix, def string
		wantPhase             wfv1.WorkflowPhase
		wantS1                wfv1.NodePhase
		wantS2Arg             string // "" = s2 never gets a pod
	}{
		{"without a default, s1 errors naming the output and s2 never runs", "", "", wfv1.WorkflowFailed, wfv1.NodeError, ""},
		{"with valueFrom.default, s1 succeeds and s2 runs with the default", "-default", ", default: fallback", wfv1.WorkflowSucceeded, wfv1.NodeSucceeded, "fallback"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(fmt.Sprintf(lostOutputs, tc.suffix, tc.def))
			done := e.WaitCompleted(wf.Name)
			s1 := harness.NodeByName(done, wf.Name+"[0].s1")
			if done.Status.Phase != tc.wantPhase || s1 == nil || s1.Phase != tc.wantS1 {
				t.Fatalf("workflow %s, s1 %v; want %s, %s\n%s", done.Status.Phase, s1, tc.wantPhase, tc.wantS1, harness.Describe(done))
			}
			pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "workflows.argoproj.io/workflow=" + wf.Name})
			if err != nil {
				t.Fatal(err)
			}
			for _, pod := range pods.Items {
				for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
					if strings.Contains(strings.Join(append(c.Command, c.Args...), " "), "outputs.parameters") {
						t.Errorf("I8: pod %s container %s runs with %v", pod.Name, c.Name, append(c.Command, c.Args...))
					}
				}
			}
			if tc.wantS2Arg == "" {
				if !strings.HasPrefix(s1.Message, engine.MissingOutputsPrefix) || !strings.Contains(s1.Message, "parameter out") {
					t.Errorf("s1 message %q should say the finalized result lacks parameter out", s1.Message)
				}
				if s2 := harness.NodeByName(done, wf.Name+"[1].s2"); s2 != nil {
					t.Errorf("s2 started: %+v", s2)
				}
				e.WaitEvent("", wf.Name, engine.ReasonMissingOutputs)
				return
			}
			if args := mainArgs(e.PodOf(done, wf.Name+"[1].s2")); !strings.Contains(strings.Join(args, " "), tc.wantS2Arg) {
				t.Errorf("s2's argv = %v, want %q", args, tc.wantS2Arg)
			}
		})
	}
}

const approvalWithDefault = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - {name: after, template: report, arguments: {parameters: [{name: answer, value: "{{steps.approve.outputs.parameters.answer}}"}]}}
  - name: approve
    suspend: {%s}
    outputs: {parameters: [{name: answer, valueFrom: {supplied: {}%s}}]}
  - name: report
    inputs: {parameters: [{name: answer}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.answer}}"]}
`

// Issue #14 item 7: a suspend node's output takes its declared default after a plain Resume or when its
// duration expires; a Resume that would leave a required output without value is refused.
func TestSuspendOutputsTakeTheirDefaultsAndAResumeWithoutOneIsRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	suspendedAtApprove := func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, wf.Name+"[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	}
	for _, tc := range []struct {
		sentence, name, suspend, def string
		resume                       *v1alpha1.ResumeParameters // nil: no action, the duration ends it
		wantArg                      string
	}{
		{"a plain Resume gives the output its default", "plain", "", ", default: maybe", &v1alpha1.ResumeParameters{}, "maybe"},
		{"an expired duration gives the output its default", "timed", "duration: '1s'", ", default: later", nil, "later"},
		{"a supplied value wins over the default", "given", "", ", default: maybe", &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": "yes"}}, "yes"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(fmt.Sprintf(approvalWithDefault, tc.name, tc.suspend, tc.def))
			if tc.resume != nil {
				e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, suspendedAtApprove)
				r := e.act("resume-"+tc.name, v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume, Resume: tc.resume})
				expectOutcome(t, r, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
			}
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("phase = %s\n%s", done.Status.Phase, harness.Describe(done))
			}
			if got := outputParam(harness.NodeByName(done, wf.Name+"[0].approve"), "answer"); got != tc.wantArg {
				t.Errorf("approve's answer = %q, want %q", got, tc.wantArg)
			}
			if args := mainArgs(e.PodOf(done, wf.Name+"[1].after")); !strings.HasSuffix(strings.Join(args, " "), "-- echo "+tc.wantArg) {
				t.Errorf("after's argv = %v, want [echo %s]", args, tc.wantArg)
			}
		})
	}
	t.Run("a plain Resume of an output with neither value nor default is refused and changes nothing", func(t *testing.T) {
		e := e.withT(t)
		wf := e.Submit(fmt.Sprintf(approvalWithDefault, "required", "", ""))
		e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, suspendedAtApprove)
		r := e.act("resume-required", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume})
		expectOutcome(t, r, v1alpha1.PhaseFailed, actions.ReasonMissingOutputParameter)
		if !strings.Contains(r.Status.Message, "raw output parameter 'answer' has not been set and does not have a default value") {
			t.Errorf("message %q should name the parameter", r.Status.Message)
		}
		still, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !suspendedAtApprove(still) || harness.NodeByName(still, wf.Name+"[1].after") != nil {
			t.Fatalf("a refused Resume moved the workflow on\n%s", harness.Describe(still))
		}
		ok := e.act("resume-required-2", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
			Resume: &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": "no"}}})
		expectOutcome(t, ok, v1alpha1.PhaseSucceeded, actions.ReasonApplied)
		done := e.WaitCompleted(wf.Name)
		if args := mainArgs(e.PodOf(done, wf.Name+"[1].after")); !strings.HasSuffix(strings.Join(args, " "), "-- echo no") {
			t.Errorf("after's argv = %v, want [echo no]", args)
		}
	})
}
