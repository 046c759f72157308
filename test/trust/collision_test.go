package trust

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/test/harness"
)

const stampPolicyFile = "config/policy/taskresult-writer-stamp.yaml"

// pipeline (named %s) passes compile's output to ship.
const pipeline = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: compile, template: produce}
    - - {name: ship, template: report, arguments: {parameters: [{name: answer, value: "{{steps.compile.outputs.parameters.out}}"}]}}
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo real > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: report
    inputs: {parameters: [{name: answer}]}
    container: {image: alpine, command: [echo, "answer={{inputs.parameters.answer}}"]}
`

// collider (named %s) has one step, named %s.
const collider = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: %s, template: produce}
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo mine > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
`

// collision is a pipeline's compile node and a step of another workflow, named <pipeline>-x so its pods'
// names start with the pipeline's, whose node ID carries the same hash.
type collision struct {
	target, attacker string
	compileID        string // the target's node, and the name of its task result
	compilePod       string
	step             string // the attacker's step
}

func newCollision(t *testing.T, target string) collision {
	t.Helper()
	c := collision{target: target, attacker: target + "-x"}
	c.compileID = (&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: target}}).NodeID(target + "[0].compile")
	c.compilePod = podspec.PodName(target, target+"[0].compile", "produce", c.compileID)
	hash := strings.TrimPrefix(c.compileID, target+"-")
	c.step = collidingStepName(t, c.attacker+"[0].", hash)
	if got := (&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: c.attacker}}).NodeID(c.stepNode()); got != c.attacker+"-"+hash {
		t.Fatalf("step %q has node ID %s, which does not share %s's hash", c.step, got, c.compileID)
	}
	t.Logf("step %q of %s has node ID hash %s, as %s", c.step, c.attacker, hash, c.compileID)
	return c
}

func (c collision) stepNode() string { return c.attacker + "[0]." + c.step }

// start runs the target and the attacker on a node where compile reports "real", held by gate as hold
// says, and the attacker's step runs (held) until release; it returns once compile's pod has reached step,
// with the executor policy and the writer stamp installed in the namespace. The attacker's client is its
// pod's token: the executor role, its own pod's claims.
func (c collision) start(t *testing.T, hold func(compile *simnode.Behavior, gate <-chan struct{}), step string) (
	e *env, wf *wfv1.Workflow, attacker versioned.Interface, release func()) {
	t.Helper()
	gate, attacking := make(chan struct{}), make(chan struct{})
	release = func() { closeOnce(gate); closeOnce(attacking) }
	t.Cleanup(release)
	compile := simnode.Behavior{Parameters: map[string]string{"out": "real"}}
	hold(&compile, gate)
	e = newEnv(t, envOptions{executorAsServiceAccount: true, script: simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		switch {
		case info.NodeID == c.compileID:
			return compile
		case info.WorkflowName == c.attacker:
			return simnode.Behavior{Parameters: map[string]string{"out": "mine"}, Hold: attacking}
		}
		return simnode.Behavior{Parameters: map[string]string{"out": "real"}}
	}}})
	e.installExecutorPolicy()
	harness.InstallPolicy(t, cp.Config(), stampPolicyFile, e.Namespace)
	e.waitStamped()

	wf = e.Submit(fmt.Sprintf(pipeline, c.target))
	theirs := e.Submit(fmt.Sprintf(collider, c.attacker, c.step))
	theirs = e.WaitFor(theirs.Name, "running its step", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, c.stepNode())
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	pod := e.PodOf(theirs, c.stepNode())
	attacker = versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims(pod.Name, string(pod.UID))))
	if err := e.node.WaitForStep(t.Context(), e.Namespace, c.compilePod, step); err != nil {
		t.Fatal(err)
	}
	return e, wf, attacker, release
}

// Issue #44 item 11(b): argo's node IDs are 32-bit fnv hashes of node names, so a submitter finds a step name
// whose node ID in its workflow build-x has the hash of build's node compile: its pod's name starts with
// "build-" and ends with that hash, and the executor policy, which can only compare names, let its token
// patch build-<hash>, compile's result, after compile reported: ship ran with the attacker's output. With
// config/policy's writer stamp the result names the pod that wrote it, and the executor policy refuses an
// update by any other pod: ship runs with compile's own output.
func TestAPodWhoseNodeIDCollidesWithAnotherNodesMayNotChangeItsResult(t *testing.T) {
	c := newCollision(t, "build")
	e, wf, attacker, release := c.start(t, func(b *simnode.Behavior, gate <-chan struct{}) { b.HoldAfterReport = gate }, simnode.StepResultFinalized)

	_, err := attacker.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Patch(t.Context(), c.compileID, types.MergePatchType,
		[]byte(`{"outputs":{"parameters":[{"name":"out","value":"FORGED"}]}}`), metav1.PatchOptions{})
	if refusal := "may not change task result " + c.compileID + ", which another pod wrote"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refusal) {
		t.Errorf("the attacker's pod patching %s: %v, want 403 ...%q", c.compileID, err, refusal)
	}
	if err == nil { // the controller decides on the forged report once it has seen it
		e.WaitFor(wf.Name, "seen the forged report", harness.DefaultTimeout, func(wf *wfv1.Workflow) bool {
			return outputOf(harness.NodeByName(wf, c.target+"[0].compile")) == "FORGED"
		})
	}
	// Read while compile's pod holds after its report (the controller deletes results at completion).
	r, err := e.Argo.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Get(t.Context(), c.compileID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release()

	done := e.WaitCompleted(wf.Name)
	if args := mainArgs(e.PodOf(done, c.target+"[1].ship")); done.Status.Phase != wfv1.WorkflowSucceeded || !strings.Contains(args, "answer=real") {
		t.Errorf("%s = %s, ship ran %q; want Succeeded with compile's own output answer=real", wf.Name, done.Status.Phase, args)
	}
	compiler := e.PodOf(done, c.target+"[0].compile")
	if r.Annotations[taskresult.AnnotationWriterPodName] != compiler.Name || r.Annotations[taskresult.AnnotationWriterPodUID] != string(compiler.UID) {
		t.Errorf("compile's result is stamped %v, want its pod %s (%s)", r.Annotations, compiler.Name, compiler.UID)
	}
	if theirs := e.WaitCompleted(c.attacker); theirs.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("%s = %s, want Succeeded on its own result", c.attacker, theirs.Status.Phase)
	}
}

// The same collision, the attacker's pod first: it creates deploy's compile result while compile's pod
// runs and has not written it yet. The writer stamp names the attacker's pod, so the controller takes
// nothing from it for compile (TaskResultIgnored, other_pod); compile's own executor may not update a
// result another pod wrote, so compile fails instead of succeeding with the attacker's output.
func TestAResultAPodWithACollidingNodeIDCreatedFirstDecidesNothing(t *testing.T) {
	c := newCollision(t, "deploy")
	e, wf, attacker, release := c.start(t, func(b *simnode.Behavior, gate <-chan struct{}) { b.HoldBeforeResult = gate }, simnode.StepRunning)

	forged := forgedResult(wf, e.instance, c.compileID)
	forged.Outputs.Parameters[0].Name = "out"
	forged, err := attacker.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(t.Context(), forged, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the attacker's pod creating %s (the executor policy cannot tell it from compile's pod): %v", c.compileID, err)
	}
	t.Logf("the attacker's result is stamped %v", forged.Annotations)
	// The controller has seen the result once it warns about it, or (as before the fix) once compile shows it.
	harness.Until(t, "the controller reacting to the attacker's result", harness.DefaultTimeout, func(ctx context.Context) bool {
		cur, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, wf.Name, metav1.GetOptions{})
		return len(e.Events("Workflow", wf.Name, taskresult.ReasonIgnored)) > 0 ||
			(err == nil && outputOf(harness.NodeByName(cur, c.target+"[0].compile")) == "FORGED")
	})
	if msgs := strings.Join(harness.Messages(e.Events("Workflow", wf.Name, taskresult.ReasonIgnored)), "\n"); !strings.Contains(msgs, c.compileID) ||
		!strings.Contains(msgs, "names another pod") {
		t.Errorf("TaskResultIgnored Events %q, want %s ignored as another pod's", msgs, c.compileID)
	}
	if n := e.Metric("wfguard_taskresult_ignored_total", map[string]string{"reason": taskresult.IgnoredOtherPod}); n < 1 {
		t.Errorf("wfguard_taskresult_ignored_total{reason=other_pod} = %v, want >= 1", n)
	}
	release()

	done := e.WaitCompleted(wf.Name)
	compile := harness.NodeByName(done, c.target+"[0].compile")
	if done.Status.Phase == wfv1.WorkflowSucceeded || outputOf(compile) == "FORGED" || harness.NodeByName(done, c.target+"[1].ship") != nil {
		t.Errorf("%s = %s, compile %s with output %q, ship ran: %t; want compile failed without the attacker's output and ship never run\n%s",
			wf.Name, done.Status.Phase, compile.Phase, outputOf(compile), harness.NodeByName(done, c.target+"[1].ship") != nil, harness.Describe(done))
	}
	t.Logf("compile: %s %q", compile.Phase, compile.Message)
}

// outputOf is the node's output parameter out, "" when it has none.
func outputOf(n *wfv1.NodeStatus) string {
	if n == nil || n.Outputs == nil {
		return ""
	}
	for _, p := range n.Outputs.Parameters {
		if p.Name == "out" && p.Value != nil {
			return p.Value.String()
		}
	}
	return ""
}

// collidingStepName finds a step name [a-z][a-z0-9]{6} whose node name, prefix+name, has the fnv32a hash
// want (decimal), as argo's Workflow.NodeID computes it. fnv32a is (h ^ byte) * prime per byte and the prime
// is odd, so each step can be undone: a meet in the middle over 4 leading and 3 trailing characters looks
// at 26*36^3 prefixes against 36^3 suffixes, in a fixed order, and finds a name in well under a second.
func collidingStepName(t *testing.T, prefix, want string) string {
	t.Helper()
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	const prime = 16777619
	inverse := uint32(prime) // Newton's iteration for the inverse of an odd number modulo 2^32
	for range 5 {
		inverse *= 2 - prime*inverse
	}
	var target uint32
	if _, err := fmt.Sscan(want, &target); err != nil {
		t.Fatalf("hash %q: %v", want, err)
	}
	// The state before each 3-character suffix that ends at target.
	before := make(map[uint32]string, 36*36*36)
	for _, c1 := range alphabet {
		for _, c2 := range alphabet {
			for _, c3 := range alphabet {
				h := target
				for _, c := range []rune{c3, c2, c1} {
					h = (h * inverse) ^ uint32(c)
				}
				before[h] = string([]rune{c1, c2, c3})
			}
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(prefix))
	start := h.Sum32()
	for _, c0 := range alphabet[:26] {
		for _, c1 := range alphabet {
			for _, c2 := range alphabet {
				for _, c3 := range alphabet {
					s := start
					for _, c := range []rune{c0, c1, c2, c3} {
						s = (s ^ uint32(c)) * prime
					}
					if suffix, ok := before[s]; ok {
						return string([]rune{c0, c1, c2, c3}) + suffix
					}
				}
			}
		}
	}
	t.Fatalf("no 7-character step name after %q hashes to %s", prefix, want)
	return ""
}

// waitStamped waits until the writer-stamp policy stamps a dry-run result a pod's token creates: a policy
// reaches admission asynchronously.
func (e *env) waitStamped() {
	e.t.Helper()
	probe := versioned.NewForConfigOrDie(harness.AsServiceAccount(cp.Config(), e.Namespace, "default", simnode.PodClaims("probe-main-1", "uid-probe")))
	harness.Until(e.t, "the writer stamp policy stamps a result", harness.DefaultTimeout, func(ctx context.Context) bool {
		r, err := probe.ArgoprojV1alpha1().WorkflowTaskResults(e.Namespace).Create(ctx, probeResult, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && r.Annotations[taskresult.AnnotationWriterPodUID] == "uid-probe"
	})
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
