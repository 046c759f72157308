package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// uploaded is where the producer's executor puts artifact a: the location it declares, as argoexec does.
var uploaded = wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{
	S3Bucket: wfv1.S3Bucket{Bucket: "artifacts", Endpoint: "minio:9000"}, Key: "passing/a.tgz"}}

// artifactPassing is a workflow (name, then the producer's artifact the consumer names) whose consumer step
// takes an artifact from its producer step; templates follow it.
const artifactPassing = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.%s}}"}]}`

// artifactTemplates are a producer of artifact a (and an optional b it never makes) and a consumer of a.
const artifactTemplates = `
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo hi > /tmp/a"]}
    outputs:
      artifacts:
      - {name: a, path: /tmp/a, s3: {bucket: artifacts, endpoint: "minio:9000", key: passing/a.tgz}}
      - {name: b, path: /tmp/b, optional: true, s3: {bucket: artifacts, endpoint: "minio:9000", key: passing/b.tgz}}
  - name: consume
    inputs: {artifacts: [{name: a, path: /tmp/a}]}
    container: {image: alpine, command: [cat, /tmp/a]}
`

// executorTemplate is the template argoexec reads in a pod: ARGO_TEMPLATE on its init container.
func executorTemplate(t *testing.T, pod *corev1.Pod) *wfv1.Template {
	t.Helper()
	for _, c := range pod.Spec.InitContainers {
		for _, env := range c.Env {
			if env.Name == common.EnvVarTemplate {
				tmpl := &wfv1.Template{}
				if err := json.Unmarshal([]byte(env.Value), tmpl); err != nil {
					t.Fatalf("decoding %s of pod %s: %v", common.EnvVarTemplate, pod.Name, err)
				}
				return tmpl
			}
		}
	}
	t.Fatalf("pod %s has no init container with %s", pod.Name, common.EnvVarTemplate)
	return nil
}

func TestAnOutputArtifactIsPassedByReferenceToTheNextStepsPod(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Artifacts: map[string]wfv1.ArtifactLocation{"a": uploaded}},
	}}})
	for _, tc := range []struct {
		sentence, name, body, producer, consumer string
	}{
		{"steps", "art-steps", `
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.a}}"}]}`,
			"art-steps[0].produce", "art-steps[1].consume"},
		{"a DAG", "art-dag", `
  - name: main
    dag:
      tasks:
      - {name: produce, template: produce}
      - name: consume
        template: consume
        depends: produce
        arguments: {artifacts: [{name: a, from: "{{tasks.produce.outputs.artifacts.a}}"}]}`,
			"art-dag.produce", "art-dag.consume"},
	} {
		wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  entrypoint: main
  templates:` + tc.body + artifactTemplates)
		done := e.WaitCompleted(wf.Name)
		if done.Status.Phase != wfv1.WorkflowSucceeded {
			t.Fatalf("%s: phase = %s %q\n%s", tc.sentence, done.Status.Phase, done.Status.Message, harness.Describe(done))
		}
		producer := harness.NodeByName(done, tc.producer)
		if producer.Outputs == nil || len(producer.Outputs.Artifacts) != 1 || producer.Outputs.Artifacts[0].Name != "a" ||
			producer.Outputs.Artifacts[0].S3 == nil || producer.Outputs.Artifacts[0].S3.Key != "passing/a.tgz" {
			t.Errorf("%s: the producer's outputs record %v, want artifact a at passing/a.tgz (and no optional b)", tc.sentence, producer.Outputs)
		}
		in := executorTemplate(t, e.PodOf(done, tc.consumer)).Inputs.GetArtifactByName("a")
		if in == nil || in.S3 == nil || in.S3.Bucket != "artifacts" || in.S3.Endpoint != "minio:9000" || in.S3.Key != "passing/a.tgz" ||
			in.Path != "/tmp/a" || in.From != "" {
			t.Errorf("%s: the consumer's executor would download %+v, want s3 artifacts/passing/a.tgz to /tmp/a", tc.sentence, in)
		}
		if c := harness.NodeByName(done, tc.consumer); c.Inputs == nil || c.Inputs.GetArtifactByName("a") == nil || c.Inputs.GetArtifactByName("a").S3 == nil {
			t.Errorf("%s: the consumer node records inputs %v, want artifact a with its location", tc.sentence, c.Inputs)
		}
	}
}

func TestAnArtifactFromThatDoesNotResolveFailsOnlyItsWorkflowNamingIt(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Artifacts: map[string]wfv1.ArtifactLocation{"a": uploaded}},
	}}})
	// b is declared optional and never made: the reference is valid, but nothing is there at run time.
	missing := e.Submit(manifest(artifactPassing, "art-missing", "b") + artifactTemplates)
	undeclared := e.Submit(manifest(artifactPassing, "art-undeclared", "nope") + artifactTemplates)
	good := e.Submit(manifest(artifactPassing, "art-good", "a") + artifactTemplates)

	done := e.WaitCompleted(missing.Name)
	const msg = `Failed to resolve references: unable to resolve references: Unable to resolve: "steps.produce.outputs.artifacts.b"` // argo's words
	if done.Status.Phase == wfv1.WorkflowSucceeded || done.Status.Message != msg {
		t.Errorf("a from naming an artifact the producer did not make: workflow %s %q, want it failed with %q", done.Status.Phase, done.Status.Message, msg)
	}
	assertNodes(t, done, map[string]nodeSummary{
		"art-missing":            {wfv1.NodeTypeSteps, wfv1.NodeFailed, msg},
		"art-missing[0]":         {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"art-missing[0].produce": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"art-missing[1]":         {wfv1.NodeTypeStepGroup, wfv1.NodeError, msg},
	})

	done = e.WaitCompleted(undeclared.Name)
	if done.Status.Phase != wfv1.WorkflowFailed || !strings.HasPrefix(done.Status.Message, "invalid spec: ") ||
		!strings.Contains(done.Status.Message, "steps.produce.outputs.artifacts.nope") || len(done.Status.Nodes) != 0 {
		t.Errorf("a from naming an undeclared artifact fails at start (argo's validation), naming it: %s %q, %d nodes",
			done.Status.Phase, done.Status.Message, len(done.Status.Nodes))
	}

	if done = e.WaitCompleted(good.Name); done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("a workflow beside them is unaffected: %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
}
