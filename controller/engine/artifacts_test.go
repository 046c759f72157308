package engine

import (
	"encoding/json"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// podTemplate is the template a pod's executor reads (ARGO_TEMPLATE on its init container, else wait).
func templateOfPod(t *testing.T, pod *corev1.Pod) *wfv1.Template {
	t.Helper()
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, env := range c.Env {
			if env.Name == common.EnvVarTemplate {
				tmpl := &wfv1.Template{}
				if err := json.Unmarshal([]byte(env.Value), tmpl); err != nil {
					t.Fatal(err)
				}
				return tmpl
			}
		}
	}
	t.Fatalf("pod %s has no %s", pod.Name, common.EnvVarTemplate)
	return nil
}

func s3Location(key string) wfv1.ArtifactLocation {
	return wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{
		S3Bucket: wfv1.S3Bucket{Bucket: "bucket", Endpoint: "minio:9000"}, Key: key}}
}

func TestFromResolvesToTheProducersRecordedArtifact(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		spec     string
		producer string // the node whose outputs get the artifact
		recorded []wfv1.Artifact
		consumer string // the pod node that must download it
		wantKey  string // its input artifact's key; "" when the consumer must not start
		failed   string // the node that errors when the reference does not resolve
		message  string
	}{
		{"a step's from names an earlier step's output artifact", `
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.a}}"}]}`,
			"arts[0].produce", []wfv1.Artifact{{Name: "a", Path: "/tmp/a", ArtifactLocation: s3Location("arts/produce/a.tgz")}},
			"arts[1].consume", "arts/produce/a.tgz", "", ""},
		{"a task's from names its dependency's output artifact, with a subPath", `
  - name: main
    dag:
      tasks:
      - {name: produce, template: produce}
      - name: consume
        template: consume
        depends: produce
        arguments: {artifacts: [{name: a, from: "{{tasks.produce.outputs.artifacts.a}}", subPath: inner.txt}]}`,
			"arts.produce", []wfv1.Artifact{{Name: "a", Path: "/tmp/a", ArtifactLocation: s3Location("dir")}},
			"arts.consume", "dir/inner.txt", "", ""},
		{"a nested steps template passes its input artifact on with inputs.artifacts", `
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: nested
        template: nested
        arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.a}}"}]}
  - name: nested
    inputs: {artifacts: [{name: a}]}
    steps:
    - - name: consume
        template: consume
        arguments: {artifacts: [{name: a, from: "{{inputs.artifacts.a}}"}]}`,
			"arts[0].produce", []wfv1.Artifact{{Name: "a", Path: "/tmp/a", ArtifactLocation: s3Location("k")}},
			"arts[1].nested[0].consume", "k", "", ""},
		{"a step's exit handler's from names the step's own output artifact", `
  - name: main
    steps:
    - - name: produce
        template: produce
        hooks: {exit: {template: consume, arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.a}}"}]}}}`,
			"arts[0].produce", []wfv1.Artifact{{Name: "a", Path: "/tmp/a", ArtifactLocation: s3Location("hooked")}},
			"arts[0].produce.onExit", "hooked", "", ""},
		{"a step's from naming an artifact its producer did not record errors the step group", `
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments: {artifacts: [{name: a, from: "{{steps.produce.outputs.artifacts.a}}"}]}`,
			"arts[0].produce", nil, "arts[1].consume", "", "arts[1]",
			`Failed to resolve references: unable to resolve references: Unable to resolve: "steps.produce.outputs.artifacts.a"`},
		{"a task's from naming an artifact its producer did not record errors the task", `
  - name: main
    dag:
      tasks:
      - {name: produce, template: produce}
      - name: consume
        template: consume
        depends: produce
        arguments: {artifacts: [{name: a, from: "{{tasks.produce.outputs.artifacts.a}}"}]}`,
			"arts.produce", nil, "arts.consume", "", "arts.consume",
			`Unable to resolve: "tasks.produce.outputs.artifacts.a"`},
	} {
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: arts, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:`+tc.spec+`
  - name: produce
    container: {image: alpine, command: ["true"]}
    outputs: {artifacts: [{name: a, path: /tmp/a, optional: true, s3: {bucket: bucket, endpoint: "minio:9000", key: arts/a.tgz}}]}
  - name: consume
    inputs: {artifacts: [{name: a, path: /tmp/a}]}
    container: {image: alpine, command: [cat, /tmp/a]}
`), wf); err != nil {
			t.Fatal(err)
		}
		pods := &recordingPods{created: map[string]*corev1.Pod{}}
		e := &Engine{Pods: pods}
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		pass := func() {
			now = now.Add(time.Second)
			runPass(t, e, wf, now)
		}
		pass()
		if wf.Status.Phase != wfv1.WorkflowRunning {
			t.Fatalf("%s: the workflow did not start: %s %s", tc.sentence, wf.Status.Phase, wf.Status.Message)
		}
		n := p0(wf, tc.producer)
		if n == nil {
			t.Fatalf("%s: the producer %s was not started", tc.sentence, tc.producer)
		}
		synced := true
		n.Phase, n.TaskResultSynced, n.Outputs = wfv1.NodeSucceeded, &synced, &wfv1.Outputs{Artifacts: tc.recorded}
		wf.Status.Nodes[n.ID] = *n
		pass()
		pod, started := pods.created[wf.NodeID(tc.consumer)]
		if tc.wantKey == "" {
			if started {
				t.Errorf("%s: the consumer started though its artifact does not resolve", tc.sentence)
			}
			if f := p0(wf, tc.failed); f == nil || f.Phase != wfv1.NodeError || f.Message != tc.message {
				t.Errorf("%s: %s = %+v, want Error %q", tc.sentence, tc.failed, f, tc.message)
			}
			continue
		}
		if !started {
			t.Fatalf("%s: the consumer %s was not started: %s", tc.sentence, tc.consumer, describeNodes(wf))
		}
		in := templateOfPod(t, pod).Inputs.GetArtifactByName("a")
		if in == nil || in.S3 == nil || in.S3.Key != tc.wantKey || in.S3.Bucket != "bucket" || in.Path != "/tmp/a" || in.From != "" {
			t.Errorf("%s: the consumer's executor reads input artifact %+v, want s3 bucket/%s at /tmp/a", tc.sentence, in, tc.wantKey)
		}
		if c := p0(wf, tc.consumer); c.Inputs == nil || c.Inputs.GetArtifactByName("a") == nil || c.Inputs.GetArtifactByName("a").S3.Key != tc.wantKey {
			t.Errorf("%s: the consumer node records inputs %+v", tc.sentence, c.Inputs)
		}
	}
}

func describeNodes(wf *wfv1.Workflow) string {
	data, _ := json.Marshal(wf.Status.Nodes)
	return string(data)
}

func TestTemplateOutputArtifactsResolveFromTheirScope(t *testing.T) {
	wf := &wfv1.Workflow{}
	wf.Name = "w"
	id := wf.NodeID("w[0].produce")
	wf.Status.Nodes = wfv1.Nodes{id: {ID: id, Name: "w[0].produce", Outputs: &wfv1.Outputs{Artifacts: []wfv1.Artifact{
		{Name: "a", ArtifactLocation: s3Location("k")}}}}}
	p := &Pass{WF: wf}
	sc := scope{"steps.produce.id": id}
	tmpl := &wfv1.Template{Outputs: wfv1.Outputs{Artifacts: []wfv1.Artifact{
		{Name: "out", From: "{{steps.produce.outputs.artifacts.a}}"},
		{Name: "gone", From: "{{steps.produce.outputs.artifacts.zz}}", Optional: true},
		{Name: "plain"},
	}}}
	out, err := templateOutputs(tmpl, sc, nil, artifactResolver{p: p, sc: sc, inputs: tmpl})
	if err != nil || out == nil || len(out.Artifacts) != 1 || out.Artifacts[0].Name != "out" || out.Artifacts[0].S3.Key != "k" {
		t.Errorf("a steps template's output artifact is its step's, renamed; an optional one that does not resolve and one without from are left out: %+v %v", out, err)
	}
	tmpl.Outputs.Artifacts[1].Optional = false
	if _, err := templateOutputs(tmpl, sc, nil, artifactResolver{p: p, sc: sc, inputs: tmpl}); err == nil ||
		err.Error() != `unable to resolve outputs from scope: Unable to resolve: "steps.produce.outputs.artifacts.zz"` {
		t.Errorf("a required output artifact that does not resolve is argo's error: %v", err)
	}
	args, err := artifactResolver{p: p, sc: sc}.arguments([]wfv1.Artifact{
		{Name: "x", From: "{{workflow.outputs.artifacts.a}}", Optional: true},
		{Name: "y", ArtifactLocation: s3Location("given")},
	})
	if err != nil || len(args) != 1 || args[0].Name != "y" {
		t.Errorf("an optional argument that does not resolve is dropped and one with a location is kept: %+v %v", args, err)
	}
}

func TestArtifactFeaturesWfguardDoesNotRunAreRejected(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		tmpl     wfv1.Template
		want     string
	}{
		{"fromExpression on a step argument", wfv1.Template{Steps: []wfv1.ParallelSteps{{Steps: []wfv1.WorkflowStep{
			{Name: "s", Arguments: wfv1.Arguments{Artifacts: []wfv1.Artifact{{Name: "a", FromExpression: "x"}}}}}}}},
			"step s: arguments.artifacts.a.fromExpression"},
		{"artifact GC on an output artifact",
			wfv1.Template{Container: &corev1.Container{}, Outputs: wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "a", Path: "/a",
				ArtifactLocation: s3Location("k"), ArtifactGC: &wfv1.ArtifactGC{Strategy: wfv1.ArtifactGCOnWorkflowDeletion}}}}},
			"outputs.artifacts.a.artifactGC"},
	} {
		got := unsupportedInTemplate(&tc.tmpl)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sentence, got, tc.want)
		}
	}
	ok := wfv1.Template{Container: &corev1.Container{}, ArchiveLocation: &wfv1.ArtifactLocation{S3: s3Location("arts/{{pod.name}}").S3},
		Inputs:  wfv1.Inputs{Artifacts: []wfv1.Artifact{{Name: "in", Path: "/in"}}},
		Outputs: wfv1.Outputs{Artifacts: []wfv1.Artifact{{Name: "a", Path: "/a"}}}}
	if got := unsupportedInTemplate(&ok); len(got) != 0 {
		t.Errorf("input artifacts and output artifacts with an archiveLocation run: %q", got)
	}
}
