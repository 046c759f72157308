package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// httpStub is what an http executor's file would hold, reduced to answering at once.
type httpStub struct{}

func (httpStub) run(_ context.Context, _ *Engine, c *nodeCall, n *wfv1.NodeStatus) (*wfv1.NodeStatus, error) {
	if n != nil {
		return n, nil
	}
	n = c.p.newNode(nodeAt{c.name, c.display, c.written.Name, c.boundaryID}, nodeTypeOf(c.resolved), wfv1.NodeSucceeded, "")
	c.p.Events = append(c.p.Events, nodeEvent(n))
	return n, nil
}

const callsHTTP = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: ask, template: ask}], [{name: work, template: work}]]
  - name: ask
    http: {url: "https://example.com"}
  - name: work
    container: {image: alpine, command: ["true"]}
`

// docs/architecture.md: a template kind is added by an executor in a file of its own and one row of
// executors; nothing else in the engine names the kinds it runs.
func TestANewTemplateKindIsOneExecutorAndOneRowOfTheTable(t *testing.T) {
	for _, tc := range []struct {
		sentence  string
		row       bool
		wantPhase wfv1.WorkflowPhase
	}{
		{"without a row for http, a workflow calling an http template is refused when it starts", false, wfv1.WorkflowFailed},
		{"with the row, the same workflow runs the http node through its executor, then the next step", true, wfv1.WorkflowSucceeded},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if tc.row {
				saved := executors
				executors = append(slices.Clone(executors), executorRow{wfv1.TemplateTypeHTTP, "http", wfv1.NodeTypeHTTP, httpStub{}})
				t.Cleanup(func() { executors = saved })
			}
			wf, _ := runToEnd(t, &Engine{}, callsHTTP, corev1.PodSucceeded)
			if wf.Status.Phase != tc.wantPhase {
				t.Fatalf("workflow %s (%s), want %s", wf.Status.Phase, wf.Status.Message, tc.wantPhase)
			}
			if !tc.row {
				if !strings.Contains(wf.Status.Message, "http template") {
					t.Errorf("message %q does not name the http template", wf.Status.Message)
				}
				return
			}
			ask := p0(wf, "wf[0].ask")
			if ask == nil || ask.Type != wfv1.NodeTypeHTTP || ask.Phase != wfv1.NodeSucceeded || p0(wf, "wf[1].work") == nil {
				t.Fatalf("ask = %+v; want an HTTP node that succeeded, then the next step", ask)
			}
		})
	}
}

// docs/architecture.md's dispatch table names every kind the engine runs.
func TestTheArchitecturePageNamesEveryKindTheEngineRuns(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range executors {
		if !strings.Contains(string(doc), "`"+x.field+"`") || !strings.Contains(string(doc), "| `"+string(x.nodeType)+"` |") {
			t.Errorf("docs/architecture.md's dispatch table lacks %s (node type %s)", x.field, x.nodeType)
		}
	}
}
