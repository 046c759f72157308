package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

const globalChain = `
metadata: {name: chain, namespace: ns, uid: 22222222-2222-2222-2222-222222222222}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: produce}
    - - name: b
        template: consume
        arguments: {artifacts: [{name: art, from: "{{workflow.outputs.artifacts.my-art}}"}]}
  - name: produce
    container: {image: alpine, command: ["true"]}
    outputs:
      parameters: [{name: p, globalName: my-param, valueFrom: {path: /tmp/p}}]
      artifacts: [{name: a, path: /tmp/a, globalName: my-art, s3: {endpoint: "minio:9000", bucket: b, key: chain/a.tgz}}]
  - name: consume
    inputs:
      parameters: [{name: param, value: "{{workflow.outputs.parameters.my-param}}"}]
      artifacts: [{name: art, path: /art}]
    container: {image: alpine, command: [echo, "{{inputs.parameters.param}}"]}`

func TestOutputsWithAGlobalNameBecomeTheWorkflowsOutputsAndItsVariables(t *testing.T) {
	wf, pods, _ := runChain(t, globalChain, &wfv1.Outputs{
		Parameters: []wfv1.Parameter{{Name: "p", GlobalName: "my-param", Value: wfv1.AnyStringPtr("hello")}},
		Artifacts: []wfv1.Artifact{{Name: "a", Path: "/tmp/a", GlobalName: "my-art",
			ArtifactLocation: wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{Key: "chain/a.tgz"}}}},
	})
	out := wf.Status.Outputs
	if out == nil || len(out.Parameters) != 1 || out.Parameters[0].Name != "my-param" || out.Parameters[0].Value.String() != "hello" {
		t.Errorf("the workflow's output parameters = %+v, want my-param = hello", out)
	}
	if out == nil || len(out.Artifacts) != 1 || out.Artifacts[0].Name != "my-art" || out.Artifacts[0].Path != "" ||
		out.Artifacts[0].GlobalName != "" || out.Artifacts[0].S3 == nil || out.Artifacts[0].S3.Key != "chain/a.tgz" {
		t.Errorf("the workflow's output artifacts = %+v, want my-art at chain/a.tgz without path or globalName", out)
	}
	b := p0(wf, "chain[1].b")
	if b == nil {
		t.Fatalf("the consumer did not start: %s %q %v", wf.Status.Phase, wf.Status.Message, nodeSummary(wf))
	}
	if p := b.Inputs.GetParameterByName("param"); p == nil || p.Value.String() != "hello" {
		t.Errorf("the consumer's input parameter = %+v, want hello from the global output", p)
	}
	if a := b.Inputs.GetArtifactByName("art"); a == nil || a.S3 == nil || a.S3.Key != "chain/a.tgz" {
		t.Errorf("the consumer's input artifact = %+v, want the global artifact's location", a)
	}
	if pod, ok := pods.created[b.ID]; !ok || !strings.Contains(strings.Join(pod.Spec.Containers[1].Command, " "), "echo hello") {
		t.Errorf("the consumer's pod was not created running echo hello")
	}
}
