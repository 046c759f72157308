package engine

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestWorkflowMetadataLabelsTheWorkflowAtItsStartAsArgoDoes(t *testing.T) {
	for _, tc := range []struct {
		sentence        string
		metadata        string
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantError       string // the workflow's message when it errors
	}{
		{"labels and annotations are set on the workflow", `{labels: {team: blue}, annotations: {owner: alice}}`,
			map[string]string{"team": "blue"}, map[string]string{"owner": "alice"}, ""},
		{"labelsFrom evaluates an expression over the workflow's variables",
			`{labels: {team: blue}, labelsFrom: {env: {expression: "workflow.parameters.env + '-' + workflow.labels.team"}}}`,
			map[string]string{"team": "blue", "env": "prod-blue"}, nil, ""},
		{"an expression that is not a string errors the workflow with argo's message", `{labelsFrom: {num: {expression: "1 + 1"}}}`,
			nil, nil, `failed to evaluate label "num" expression "1 + 1" evaluted to int but must be a string`},
		{"an invalid label value errors the workflow", `{labels: {team: "not a label value"}}`,
			nil, nil, `invalid label value "not a label value" for label "team"`},
		{"a label under argo's own prefix is refused: it could move the workflow out of its controller",
			`{labels: {workflows.argoproj.io/controller-instanceid: other}}`,
			nil, nil, `spec.workflowMetadata may not set label "workflows.argoproj.io/controller-instanceid"`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: md, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  arguments: {parameters: [{name: env, value: prod}]}
  workflowMetadata: `+tc.metadata+`
  templates:
  - {name: main, container: {image: alpine, command: ["true"]}}
`), wf); err != nil {
				t.Fatal(err)
			}
			e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}
			ok := runPass(t, e, wf, time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
			if tc.wantError != "" {
				if ok || wf.Status.Phase != wfv1.WorkflowError || !strings.Contains(wf.Status.Message, tc.wantError) {
					t.Fatalf("workflow %s %q, want Error containing %q", wf.Status.Phase, wf.Status.Message, tc.wantError)
				}
				return
			}
			if !ok || wf.Status.Phase != wfv1.WorkflowRunning {
				t.Fatalf("workflow %s %q, want Running", wf.Status.Phase, wf.Status.Message)
			}
			for k, v := range tc.wantLabels {
				if wf.Labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, wf.Labels[k], v, wf.Labels)
				}
			}
			for k, v := range tc.wantAnnotations {
				if wf.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, wf.Annotations[k], v)
				}
			}
		})
	}
}
