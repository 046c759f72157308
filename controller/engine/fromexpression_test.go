package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// coinFlipPass is a workflow whose flip step printed result and whose heads step produced artifact r;
// tails was skipped. sc is the steps template's scope (or the DAG's, with kind "tasks").
func coinFlipPass(kind, result string) (*Pass, scope) {
	wf := &wfv1.Workflow{}
	wf.Name = "w"
	sc := scope{}
	add := func(step string, n wfv1.NodeStatus) {
		n.Name = "w." + step
		n.ID = wf.NodeID(n.Name)
		if wf.Status.Nodes == nil {
			wf.Status.Nodes = wfv1.Nodes{}
		}
		wf.Status.Nodes[n.ID] = n
		sc.addNode(kind+"."+step, &n)
	}
	add("flip", wfv1.NodeStatus{Phase: wfv1.NodeSucceeded, Outputs: &wfv1.Outputs{Result: &result}})
	add("heads", wfv1.NodeStatus{Phase: wfv1.NodeSucceeded, Outputs: &wfv1.Outputs{Artifacts: []wfv1.Artifact{
		{Name: "r", ArtifactLocation: s3Location("heads/r.tgz")}}}})
	add("tails", wfv1.NodeStatus{Phase: wfv1.NodeSkipped, Type: wfv1.NodeTypeSkipped})
	return &Pass{WF: wf}, sc
}

func TestAStepsOrDAGTemplatesOutputsArePickedByExpressions(t *testing.T) {
	const pick = "%s['flip'].outputs.result == 'heads' ? %s.heads.outputs.artifacts.r : %s.tails.outputs.artifacts.r"
	expr := func(kind string) string { return strings.ReplaceAll(pick, "%s", kind) }
	for _, tc := range []struct {
		sentence, kind, result string
		outputs                wfv1.Outputs
		wantKey, wantParam     string
		wantErr                string
	}{
		{"a steps template's fromExpression picks the artifact of the step that ran", "steps", "heads",
			wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "result", FromExpression: expr("steps")}}}, "heads/r.tgz", "", ""},
		{"a DAG template's fromExpression reads tasks the same way", "tasks", "heads",
			wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "result", FromExpression: expr("tasks")}}}, "heads/r.tgz", "", ""},
		{"an expression that picks the skipped step's artifact is argo's error", "steps", "tails",
			wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "result", FromExpression: expr("steps")}}}, "", "",
			"unable to resolve outputs from scope: "},
		{"an optional artifact does not excuse an expression that picks nothing", "steps", "tails",
			wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "result", FromExpression: expr("steps"), Optional: true}}}, "", "",
			"unable to resolve outputs from scope: "},
		{"an expression that is not an artifact is argo's error", "steps", "heads",
			wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "result", FromExpression: "steps.flip.outputs.result"}}}, "", "",
			"is not an artifact"},
		{"an output parameter's valueFrom.expression is rendered as argo renders any value", "tasks", "heads",
			wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "n", ValueFrom: &wfv1.ValueFrom{
				Expression: "tasks.flip.outputs.result == 'heads' ? 1 : 2"}}}}, "", "1", ""},
		{"an output parameter whose expression fails takes its default", "steps", "heads",
			wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "n", ValueFrom: &wfv1.ValueFrom{
				Expression: "steps.nope.outputs.result + 1", Default: wfv1.AnyStringPtr("d")}}}}, "", "d", ""},
		{"the expressions see the template's scope, not the workflow's globals", "steps", "heads",
			wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "n", ValueFrom: &wfv1.ValueFrom{Expression: "workflow.name"}}}}, "", "",
			"resolving outputs.parameters.n: "},
	} {
		p, sc := coinFlipPass(tc.kind, tc.result)
		tmpl := &wfv1.Template{Outputs: tc.outputs}
		out, err := templateOutputs(tmpl, sc, map[string]string{"workflow.name": "w"}, artifactResolver{p: p, sc: sc, inputs: tmpl})
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got error %v, want one containing %q", tc.sentence, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.sentence, err)
		case tc.wantKey != "":
			if len(out.Artifacts) != 1 || out.Artifacts[0].Name != "result" || out.Artifacts[0].S3.Key != tc.wantKey {
				t.Errorf("%s: got %+v, want artifact result at %s", tc.sentence, out.Artifacts, tc.wantKey)
			}
		default:
			if len(out.Parameters) != 1 || out.Parameters[0].Value.String() != tc.wantParam {
				t.Errorf("%s: got %+v, want %q", tc.sentence, out.Parameters, tc.wantParam)
			}
		}
	}
}

func TestFromExpressionRunsOnlyWhereArgoResolvesIt(t *testing.T) {
	steps := wfv1.Template{Steps: []wfv1.ParallelSteps{{}}, Outputs: wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "a", FromExpression: "x"}}}}
	if got := unsupportedInTemplate(&steps); len(got) != 0 {
		t.Errorf("a steps template's output fromExpression runs: %q", got)
	}
	pod := wfv1.Template{Script: &wfv1.ScriptTemplate{}, Outputs: wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "a", FromExpression: "x"}}}}
	if got := unsupportedInTemplate(&pod); len(got) != 1 || got[0] != "outputs.artifacts.a.fromExpression" {
		t.Errorf("a pod template's output fromExpression is still refused: %q", got)
	}
}
