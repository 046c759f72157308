package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// bigFan is a fan-out of 60 iterations: ~30 KiB of nodes, over an 8 KiB limit, under it compressed.
var bigFan = func() string {
	var items []string
	for i := range 60 {
		items = append(items, fmt.Sprintf("item-%02d", i))
	}
	return `
metadata: {name: big-fan}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: work
        template: echo
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withItems: [` + strings.Join(items, ", ") + `]
  - name: echo
    inputs: {parameters: [{name: v}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.v}}"]}
`
}()

// A fan-out whose nodes outgrow the size limit is stored compressed, as argo stores it, and runs to the end.
func TestAFanOutOverTheSizeLimitRunsWithCompressedNodes(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf), workers: 4, maxSize: 8 << 10})
	wf := e.Submit(bigFan)
	done := e.WaitFor(wf.Name, "completed", 180*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	if got := len(done.Status.Nodes); got != 62 {
		t.Errorf("the inflated workflow has %d nodes, want 62 (steps, step group, 60 iterations)", got)
	}
	status := e.extStatus(wf.Name)
	if _, ok := status["nodes"]; ok {
		t.Error("the stored workflow has status.nodes; want them compressed")
	}
	if c, _ := status["compressedNodes"].(string); c == "" {
		t.Error("the stored workflow has no status.compressedNodes")
	}
	if n := e.Metric("wfguard_workflow_persist_total", map[string]string{"outcome": "unstorable"}); n != 0 {
		t.Errorf("%v unstorable writes, want none", n)
	}
}

// A workflow whose status cannot be stored even compressed ends Error, says why, and releases its pods.
// Each row is one way of exceeding a limit: wfguard's own, or (with ours out of the way) the real limit of
// the API server and etcd (--max-request-bytes, 1.5 MiB by default).
func TestAStatusThatCannotBeStoredEndsTheWorkflowError(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		maxSize  int
		want     string
	}{
		{"over wfguard's limit even compressed", 0, "workflow is too large to store"},
		{"over etcd's request limit, wfguard's check out of the way", 64 << 20, "too large"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf), maxSize: tc.maxSize})
			// 0.9 MiB of random text: stored once in the spec and once in the node's inputs it passes 1.5 MiB,
			// and gzip cannot shrink it under 1 MiB.
			raw := make([]byte, 700<<10)
			_, _ = rand.Read(raw)
			big := base64.StdEncoding.EncodeToString(raw)
			wf := e.Submit(`
metadata: {name: huge-arg}
spec:
  entrypoint: main
  arguments: {parameters: [{name: big, value: "` + big + `"}]}
  templates:
  - name: main
    steps:
    - - name: use
        template: echo
        arguments: {parameters: [{name: v, value: "{{workflow.parameters.big}}"}]}
  - name: echo
    inputs: {parameters: [{name: v}]}
    container: {image: alpine, command: [echo, ok]}
`)
			done := e.WaitFor(wf.Name, "completed", 60*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
			if done.Status.Phase != wfv1.WorkflowError || !strings.HasPrefix(done.Status.Message, "workflow status cannot be stored: ") ||
				!strings.Contains(done.Status.Message, tc.want) || len(done.Status.Message) > 1024 {
				t.Errorf("phase = %s %q, want Error saying the status cannot be stored (%s), bounded", done.Status.Phase, done.Status.Message, tc.want)
			}
			for _, n := range done.Status.Nodes {
				if !n.Phase.Completed() {
					t.Errorf("node %s is still %s in an ended workflow", n.Name, n.Phase)
				}
			}
			// PodRunning then Completed=True, in argo's order, as on every completed workflow, and the reason it
			// could not be stored.
			if c := done.Status.Conditions; len(c) != 3 || c[0].Type != wfv1.ConditionTypePodRunning ||
				c[1].Type != wfv1.ConditionTypeCompleted || c[1].Status != metav1.ConditionTrue ||
				c[2].Type != controller.ConditionUnstorable || c[2].Status != metav1.ConditionTrue || c[2].Message != done.Status.Message {
				t.Errorf("conditions = %+v, want PodRunning, Completed True, then %s True with the workflow's message", c, controller.ConditionUnstorable)
			}
			if got := harness.Messages(e.WaitEvent("", wf.Name, controller.ReasonStatusTooLarge)); len(got) == 0 || got[0] != done.Status.Message {
				t.Errorf("Warning Event %s = %q, want the workflow's message", controller.ReasonStatusTooLarge, got)
			}
			if got := harness.Messages(e.WaitEvent("", wf.Name, "WorkflowFailed")); len(got) == 0 || got[0] != done.Status.Message {
				t.Errorf("argo's WorkflowFailed Event = %q, want the workflow's message", got)
			}
			if n := e.Metric("wfguard_workflow_persist_total", map[string]string{"outcome": "unstorable"}); n < 1 {
				t.Errorf("unstorable writes = %v, want at least 1", n)
			}
			e.waitPodsReleased(wf.UID)
		})
	}
}

// waitPodsReleased waits until the workflow has pods and none of them carries the status finalizer.
func (e *env) waitPodsReleased(uid types.UID) {
	e.t.Helper()
	var held []string
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		held = held[:0]
		owned := 0
		for _, pod := range pods.Items {
			if !ownedBy(&pod, uid) {
				continue
			}
			owned++
			if slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
				held = append(held, pod.Name)
			}
		}
		return owned > 0 && len(held) == 0, nil
	})
	if err != nil {
		e.t.Errorf("pods still hold the status finalizer (or none exist): %v", held)
	}
}

func ownedBy(pod *corev1.Pod, uid types.UID) bool {
	for _, o := range pod.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// The 10,000-item fan-out at the default size limit: its ~3 MiB of nodes (over etcd's 1.5 MiB) are stored
// compressed. Its iterations are skipped by `when`, so the test needs no 10,000 pods, only the nodes.
func TestATenThousandItemFanOutIsStoredCompressedAtTheDefaultLimit(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	wf := e.Submit(`
metadata: {name: ten-thousand}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: work
        template: echo
        arguments: {parameters: [{name: v, value: "{{item}}"}]}
        withSequence: {count: "10000"}
        when: "{{item}} < 0"
    - - name: last
        template: echo
        arguments: {parameters: [{name: v, value: done}]}
  - name: echo
    inputs: {parameters: [{name: v}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.v}}"]}
`)
	done := e.WaitFor(wf.Name, "completed", 300*time.Second, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %.500q", done.Status.Phase, done.Status.Message)
	}
	skipped := 0
	for _, n := range done.Status.Nodes {
		if n.Type == wfv1.NodeTypeSkipped {
			skipped++
		}
	}
	if skipped != 10000 {
		t.Errorf("%d skipped iterations, want 10000", skipped)
	}
	status := e.extStatus(wf.Name)
	if c, _ := status["compressedNodes"].(string); c == "" || status["nodes"] != nil {
		t.Errorf("the stored workflow has status.nodes %v and %d bytes of compressedNodes; want only compressedNodes", status["nodes"] != nil, len(c))
	}
}
