package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/zipbomb"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// passCounter counts the finished passes of each workflow key (Hooks.ReconcileEnd).
type passCounter struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (p *passCounter) hooks() controller.Hooks {
	return controller.Hooks{ReconcileEnd: func(key string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.byKey == nil {
			p.byKey = map[string]int{}
		}
		p.byKey[key]++
	}}
}

func (p *passCounter) of(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byKey[key]
}

// poke creates a Suspend naming workflow and waits until a pass of the workflow ended after it: each action
// is one more pass of a workflow whose status nothing changes.
func (e *env) poke(passes *passCounter, workflow, action string) {
	e.t.Helper()
	key := e.Namespace + "/" + workflow
	before, start := passes.of(key), time.Now()
	e.create(action, v1alpha1.WorkflowActionSpec{WorkflowRef: ref(workflow), Action: v1alpha1.ActionSuspend})
	harness.Until(e.t, "a pass of "+workflow+" after action "+action, harness.DefaultTimeout, func(context.Context) bool {
		return passes.of(key) > before
	})
	e.t.Logf("action %s: a pass of %s ended %s after it", action, workflow, time.Since(start).Round(time.Millisecond))
}

// Anyone who may create a Workflow writes its whole status: the CRD has no status subresource (issue #44
// item 5). mallory, who may only create and get workflows, plants completed workflows whose
// status.compressedNodes is ~250 KiB of gzip holding 250 MiB of valid nodes JSON, under the 256 MiB the
// controller inflated before: one whose gzip trailer states that size, one whose trailer claims 1 MiB.
// Each is passed again for every action naming it. The controller refuses each once, reads the truthful
// one not at all and the lying one one byte past what it claims, never reads either again, and reports
// each once; their actions get an outcome, and a workflow beside them succeeds.
func TestAZipBombInCompressedNodesIsRefusedOnceAndNeverInflatedAgain(t *testing.T) {
	var passes passCounter
	e := newEnv(t, envOptions{hooks: passes.hooks()})
	mallory := versioned.NewForConfigOrDie(e.Grant(cp.Config(), "mallory", rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group},
		Resources: []string{"workflows"}, Verbs: []string{"create", "get"}}))
	beside := e.Submit(oneStep)

	const inflated = 250 << 20
	const claimed = 1 << 20
	bombs := []struct {
		name, compressed, reason string
	}{
		{"truthful-bomb", zipbomb.CompressedNodes(inflated, 0), "over_ratio"},
		{"lying-bomb", zipbomb.CompressedNodes(inflated, claimed), "size_mismatch"},
	}
	for _, b := range bombs {
		finished := metav1.NewTime(time.Now().Truncate(time.Second))
		planted, err := mallory.ArgoprojV1alpha1().Workflows(e.Namespace).Create(t.Context(), &wfv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{Name: b.name,
				Labels: map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(wfv1.WorkflowSucceeded)}},
			Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: harness.ParseWorkflow(t, oneStep).Spec.Templates[0].Container}}},
			Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded, StartedAt: finished, FinishedAt: finished,
				CompressedNodes: b.compressed},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("mallory planting %s: %v", b.name, err)
		}
		if planted.Status.CompressedNodes != b.compressed {
			t.Fatalf("%s was stored with %d bytes of compressedNodes, not mallory's %d: the test no longer models a create that carries a status",
				b.name, len(planted.Status.CompressedNodes), len(b.compressed))
		}
		t.Logf("%s: %d bytes of compressedNodes (%d of gzip) holding %d bytes of nodes JSON", b.name, len(b.compressed),
			base64.StdEncoding.DecodedLen(len(b.compressed)), len(zipbomb.Prefix)+inflated+len(zipbomb.Suffix))
	}
	// After its first pass, three more of each, at the same resourceVersion.
	for _, b := range bombs {
		harness.Until(t, "a first pass of "+b.name, harness.DefaultTimeout, func(context.Context) bool { return passes.of(e.Namespace+"/"+b.name) > 0 })
		for i := range 3 {
			e.poke(&passes, b.name, fmt.Sprintf("%s-poke-%d", b.name, i))
		}
	}

	for _, b := range bombs {
		key := e.Namespace + "/" + b.name
		if n := passes.of(key); n < 4 {
			t.Errorf("%s was passed %d times, want at least 4", b.name, n)
		}
		if got := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": b.reason}); got != 1 {
			t.Errorf("%s: reads refused %s = %v, want 1: its bytes are read once", b.name, b.reason, got)
		}
		if got := e.Metric("wfguard_workflow_nodes_refused_total", map[string]string{"reason": b.reason}); got != 1 {
			t.Errorf("%s: wfguard_workflow_nodes_refused_total{reason=%q} = %v, want 1 (once per version)", b.name, b.reason, got)
		}
		events := e.WaitEvent("Workflow", b.name, controller.ReasonWorkflowNodesRefused)
		if len(events) != 1 || events[0].Count > 1 || !strings.Contains(events[0].Message, "status.compressedNodes refused") {
			t.Errorf("%s: %s Events %q (count %d), want one, recorded once", b.name, controller.ReasonWorkflowNodesRefused, harness.Messages(events), events[0].Count)
		}
	}
	if got, want := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": "failed_before"}), float64(2*3); got < want {
		t.Errorf("reads answered from the memory of failures = %v, want at least %v (every pass after the first)", got, want)
	}
	// Nothing else here is compressed: all that was ever decompressed is the lying trailer's claim and one byte.
	if got := e.Metric("wfguard_compressed_nodes_inflated_bytes_total", nil); got != claimed+1 {
		t.Errorf("bytes inflated = %v, want %d: the lying bomb's claim and one byte, the truthful one's none", got, claimed+1)
	}
	if got := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": "inflated"}); got != 0 {
		t.Errorf("%v reads inflated, want none", got)
	}
	if done := e.WaitCompleted(beside.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the workflow beside them = %s %q, want Succeeded", done.Status.Phase, done.Status.Message)
	}
	for _, b := range bombs {
		for i := range 3 {
			expectOutcome(t, e.waitAction(fmt.Sprintf("%s-poke-%d", b.name, i)), v1alpha1.PhaseFailed, actions.ReasonWorkflowCompleted)
		}
	}
}

// A completed workflow whose nodes are stored compressed is inflated once for its last version, not again on
// each later pass: every action naming it is a pass.
func TestACompletedFanOutWithCompressedNodesIsNotInflatedAgainOnLaterPasses(t *testing.T) {
	var passes passCounter
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf), workers: 4, maxSize: 8 << 10, hooks: passes.hooks()})
	wf := e.Submit(bigFan)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q", done.Status.Phase, done.Status.Message)
	}
	if c, _ := e.extStatus(wf.Name)["compressedNodes"].(string); c == "" {
		t.Fatal("the completed fan-out is not stored compressed: the test no longer covers compressed nodes")
	}
	e.poke(&passes, wf.Name, "first") // its completed version is now decoded
	inflatedOnce := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": "inflated"})
	passed := passes.of(e.Namespace + "/" + wf.Name)
	for i := range 3 {
		e.poke(&passes, wf.Name, fmt.Sprintf("again-%d", i))
	}
	after, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(t.Context(), wf.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != done.ResourceVersion {
		t.Fatalf("the workflow was written after it completed (%s, then %s): the test assumes one version", done.ResourceVersion, after.ResourceVersion)
	}
	if inflatedOnce < 1 {
		t.Errorf("reads inflated before the later passes = %v, want at least 1 (the fan-out's versions)", inflatedOnce)
	}
	if got := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": "inflated"}); got != inflatedOnce {
		t.Errorf("reads inflated = %v after %d more passes, want still %v", got, passes.of(e.Namespace+"/"+wf.Name)-passed, inflatedOnce)
	}
	for _, name := range []string{"first", "again-0", "again-1", "again-2"} {
		expectOutcome(t, e.waitAction(name), v1alpha1.PhaseFailed, actions.ReasonWorkflowCompleted)
	}
}

// JSON says nothing of what it decodes to: `{}` in an array of artifacts is 3 bytes and a 224-byte struct
// (issue #44 item 5, a review of its fixes). mallory, who may only create and get workflows, plants a running
// workflow whose status.compressedNodes holds 600,000 empty artifacts: 1.8 MB of nodes JSON padded with
// random letters to 100:1, within every bound on the JSON, and ~160 MiB once decoded, over the 128 MiB a
// workflow's decoding may take (the bomb of the review, 8 MiB of JSON, held 746 MiB). The controller
// refuses it before decoding it (Event, metrics), fails it, and a workflow beside it succeeds.
func TestNodesThatWouldDecodePastTheBoundAreRefusedBeforeTheyAreDecoded(t *testing.T) {
	e := newEnv(t, envOptions{})
	mallory := versioned.NewForConfigOrDie(e.Grant(cp.Config(), "mallory", rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group},
		Resources: []string{"workflows"}, Verbs: []string{"create", "get"}}))
	beside := e.Submit(oneStep)

	bomb := zipbomb.CompressedArtifacts(600000, extstatus.DefaultInflateRatio/2)
	started := metav1.NewTime(time.Now().Truncate(time.Second))
	planted, err := mallory.ArgoprojV1alpha1().Workflows(e.Namespace).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "artifacts-bomb"},
		Spec:       wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: harness.ParseWorkflow(t, oneStep).Spec.Templates[0].Container}}},
		Status:     wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, StartedAt: started, CompressedNodes: bomb},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("mallory planting the bomb: %v", err)
	}
	if planted.Status.CompressedNodes != bomb || planted.Status.Phase != wfv1.WorkflowRunning {
		t.Fatalf("the bomb was stored as %s with %d bytes of compressedNodes, not mallory's running %d: the test no longer models a create that carries a status",
			planted.Status.Phase, len(planted.Status.CompressedNodes), len(bomb))
	}
	t.Logf("%d bytes of compressedNodes holding %d bytes of nodes JSON", len(bomb), extstatus.InflatedSize(bomb))

	events := e.WaitEvent("Workflow", planted.Name, controller.ReasonWorkflowNodesRefused)
	if len(events) != 1 || !strings.Contains(events[0].Message, "would decode to over") {
		t.Errorf("%s Events %q, want one saying what the nodes would decode to", controller.ReasonWorkflowNodesRefused, harness.Messages(events))
	}
	// Read as stored: the harness's readers refuse these nodes too.
	var stored *wfv1.Workflow
	harness.Until(t, "the bomb failed", harness.DefaultTimeout, func(ctx context.Context) bool {
		stored, err = e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(ctx, planted.Name, metav1.GetOptions{})
		return err == nil && stored.Status.Phase.Completed()
	})
	if stored.Status.Phase != wfv1.WorkflowFailed || !strings.Contains(stored.Status.Message, "refused") {
		t.Errorf("the bomb = %s %.300q, want Failed saying its nodes were refused", stored.Status.Phase, stored.Status.Message)
	}
	if got := e.Metric("wfguard_workflow_nodes_refused_total", map[string]string{"reason": extstatus.InflateOverDecodedSize}); got != 1 {
		t.Errorf("wfguard_workflow_nodes_refused_total{reason=over_decoded_size} = %v, want 1", got)
	}
	if got := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": extstatus.InflateOverDecodedSize}); got != 1 {
		t.Errorf("reads refused over_decoded_size = %v, want 1: its bytes are inflated once and never decoded", got)
	}
	if got := e.Metric("wfguard_compressed_nodes_reads_total", map[string]string{"outcome": extstatus.InflateInflated}); got != 0 {
		t.Errorf("%v reads inflated and decoded, want none", got)
	}
	if done := e.WaitCompleted(beside.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("the workflow beside it = %s %q, want Succeeded", done.Status.Phase, done.Status.Message)
	}
}
