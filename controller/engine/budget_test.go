package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
)

// onePass runs Start and Execute once over a new workflow of manifest, with ctx.
func onePass(t *testing.T, ctx context.Context, manifest string) (*Pass, *recordingPods, error) {
	t.Helper()
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	p := passOver(t, manifest)
	return p, pods, (&Engine{Pods: pods}).Execute(ctx, p)
}

// passOver is the first pass over a new workflow, started.
func passOver(t *testing.T, manifest string) *Pass {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		t.Fatal(err)
	}
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), Pods: map[string]*corev1.Pod{},
		TaskResultTimeout: time.Hour}
	if _, err := (&Engine{}).Start(p); err != nil {
		t.Fatal(err)
	}
	return p
}

const recursionMeta = "metadata: {name: bomb, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}\n"

// Issue #44 item 2: a steps group calling its own template twice expanded a depth-100 binary tree in one
// pass (the depth check errored only the deepest node; its siblings went on).
func TestATemplateThatCallsItselfWithoutEndEndsTheWorkflowInOnePass(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		spec     string
	}{
		{"a steps group calling its own template twice", `spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: main}, {name: b, template: main}]]
`},
		{"a DAG whose two tasks call their own template", `spec:
  entrypoint: main
  templates:
  - name: main
    dag: {tasks: [{name: a, template: main}, {name: b, template: main}]}
`},
		{"a step calling its own template once, with continueOn", `spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: main, continueOn: {error: true, failed: true}}, {name: b, template: main, continueOn: {error: true, failed: true}}]]
`},
		{"an exit handler that calls itself", `spec:
  entrypoint: ok
  onExit: main
  templates:
  - name: ok
    suspend: {duration: "0"}
  - name: main
    steps: [[{name: a, template: main}, {name: b, template: main}]]
`},
		{"a retried template that calls itself", `spec:
  entrypoint: main
  templates:
  - name: main
    retryStrategy: {limit: 2}
    steps: [[{name: a, template: main}, {name: b, template: main}]]
`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var p *Pass
			for pass := 0; pass < 3 && (p == nil || !p.WF.Status.Phase.Completed()); pass++ {
				var err error
				if p == nil {
					p, _, err = onePass(t, context.Background(), recursionMeta+tc.spec)
				} else {
					p = &Pass{WF: p.WF, Ext: p.Ext, Now: p.Now.Add(time.Second), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
					err = (&Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}).Execute(context.Background(), p)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			wf := p.WF
			if wf.Status.Phase != wfv1.WorkflowError || !strings.Contains(wf.Status.Message, "Maximum recursion depth exceeded (100 nested templates)") {
				t.Fatalf("workflow = %s %q, want Error at the recursion depth", wf.Status.Phase, wf.Status.Message)
			}
			// One path down to the depth and back, not a tree: nodes, step groups and attempts per level.
			if n := len(wf.Status.Nodes); n > 5*MaxTemplateDepth {
				t.Fatalf("%d nodes: the expansion went on past the first path to the depth", n)
			}
		})
	}
}

func TestAPassCreatesAtMostItsShareOfNodesAndTheFanOutGoesOnInTheNextPasses(t *testing.T) {
	const items = MaxNodesPerPass + MaxNodesPerPass/2
	manifest := fanOut(items)
	p, pods, err := onePass(t, context.Background(), manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.WF.Status.Nodes) > MaxNodesPerPass+1 || len(pods.created) >= items {
		t.Fatalf("the first pass made %d nodes and %d pods, want at most %d nodes", len(p.WF.Status.Nodes), len(pods.created), MaxNodesPerPass+1)
	}
	if got := p.RequeueAfter(); got != BudgetRequeue {
		t.Fatalf("RequeueAfter = %s, want %s: the rest of the fan-out waits for the next pass", got, BudgetRequeue)
	}
	wf, pods := runToEnd(t, &Engine{}, manifest, corev1.PodSucceeded)
	if wf.Status.Phase != wfv1.WorkflowSucceeded || len(pods.created) != items {
		t.Fatalf("workflow = %s with %d pods, want Succeeded with %d", wf.Status.Phase, len(pods.created), items)
	}
}

func TestSkippedLoopIterationsCountAgainstThePassesShareToo(t *testing.T) {
	items := MaxNodesPerPass + MaxNodesPerPass/2
	for _, tc := range []struct{ sentence, templates string }{
		{"a steps loop whose when is false", `  - name: main
    steps: [[{name: each, template: work, withSequence: {count: "%d"}, when: "{{item}} < 0"}]]`},
		{"a DAG loop whose when is false", `  - name: main
    dag: {tasks: [{name: each, template: work, withSequence: {count: "%d"}, when: "{{item}} < 0"}]}`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			p, _, err := onePass(t, context.Background(), recursionMeta+"spec:\n  entrypoint: main\n  templates:\n"+fmt.Sprintf(tc.templates, items)+`
  - name: work
    container: {image: alpine, command: ["true"]}
`)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(p.WF.Status.Nodes); n > MaxNodesPerPass+2 {
				t.Fatalf("the first pass made %d nodes, want at most %d", n, MaxNodesPerPass+2)
			}
			if got := p.RequeueAfter(); got != BudgetRequeue {
				t.Fatalf("RequeueAfter = %s, want %s", got, BudgetRequeue)
			}
		})
	}
}

func TestACancelledPassStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, pods, err := onePass(t, ctx, recursionMeta+`spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: work}]]
  - name: work
    container: {image: alpine, command: ["true"]}
`)
	var api *apiError
	if !errors.As(err, &api) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute = %v, want the context's end as a transient error (the pass is retried)", err)
	}
	if len(p.WF.Status.Nodes) != 0 || len(pods.created) != 0 {
		t.Fatalf("a cancelled pass made %d nodes and %d pods", len(p.WF.Status.Nodes), len(pods.created))
	}
}
