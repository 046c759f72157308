package e2e_test

import (
	"path"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// uploadToArchive reports each declared output artifact where argoexec uploads one without a location:
// the template's archiveLocation with the key <archive key>/<name>.tgz.
func uploadToArchive(info simnode.PodInfo) simnode.Behavior {
	b := simnode.Behavior{Artifacts: map[string]wfv1.ArtifactLocation{}}
	for _, a := range info.Template.Outputs.Artifacts {
		loc := a.ArtifactLocation
		if !a.HasLocation() && info.Template.ArchiveLocation.HasLocation() {
			loc = *info.Template.ArchiveLocation.DeepCopy()
			loc.ArchiveLogs = nil
			if err := loc.SetKey(path.Join(loc.S3.Key, a.Name+".tgz")); err != nil {
				continue // no upload: the wait container fails, which the test sees
			}
		}
		b.Artifacts[a.Name] = loc
	}
	return b
}

// createRepositories creates the namespace's artifact-repositories ConfigMap: default key "default-v1", an
// s3 repository.
func (e *env) createRepositories() {
	e.t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "artifact-repositories", Namespace: e.Namespace,
			Annotations: map[string]string{"workflows.argoproj.io/default-artifact-repository": "default-v1"}},
		Data: map[string]string{"default-v1": `s3:
  bucket: repo-bucket
  endpoint: minio:9000
  insecure: true
  accessKeySecret: {name: minio-cred, key: accesskey}
  secretKeySecret: {name: minio-cred, key: secretkey}
`},
	}
	if _, err := e.Kube.CoreV1().ConfigMaps(e.Namespace).Create(e.t.Context(), cm, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// repoTemplates produce artifact a with no location (the repository's) and consume it.
const repoTemplates = `
  - name: produce
    container: {image: alpine, command: [sh, -c, "echo hi > /tmp/a"]}
    outputs: {artifacts: [{name: a, path: /tmp/a}]}
  - name: consume
    inputs: {artifacts: [{name: a, path: /tmp/a}]}
    container: {image: alpine, command: [cat, /tmp/a]}
`

func TestAnOutputArtifactWithoutALocationGoesToTheNamespacesArtifactRepository(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{Func: uploadToArchive}})
	e.createRepositories()
	wf := e.Submit(manifest(artifactPassing, "repo-default", "a") + repoTemplates)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	ref := done.Status.ArtifactRepositoryRef
	if ref == nil || ref.Namespace != e.Namespace || ref.ConfigMap != "artifact-repositories" || ref.Key != "default-v1" || ref.Default ||
		ref.ArtifactRepository == nil || ref.ArtifactRepository.S3 == nil || ref.ArtifactRepository.S3.Bucket != "repo-bucket" {
		t.Errorf("status.artifactRepositoryRef = %+v, want %s/artifact-repositories#default-v1 with its s3 repository", ref, e.Namespace)
	}
	producerPod := e.PodOf(done, "repo-default[0].produce")
	archive := executorTemplate(t, producerPod).ArchiveLocation
	wantKey := "repo-default/" + producerPod.Name
	if archive == nil || archive.S3 == nil || archive.S3.Bucket != "repo-bucket" || archive.S3.Endpoint != "minio:9000" ||
		archive.S3.Key != wantKey || archive.S3.AccessKeySecret == nil || archive.S3.AccessKeySecret.Name != "minio-cred" {
		t.Errorf("the producer's executor archives to %+v, want s3 repo-bucket at minio:9000, key %s, with the repository's secrets", archive, wantKey)
	}
	mounted := false
	for _, v := range producerPod.Spec.Volumes {
		mounted = mounted || (v.Secret != nil && v.Secret.SecretName == "minio-cred")
	}
	if !mounted {
		t.Errorf("the repository's credentials secret is not mounted for argoexec: %+v", producerPod.Spec.Volumes)
	}
	if out := harness.NodeByName(done, "repo-default[0].produce").Outputs; out == nil || out.GetArtifactByName("a") == nil ||
		out.GetArtifactByName("a").S3 == nil || out.GetArtifactByName("a").S3.Key != wantKey+"/a.tgz" {
		t.Errorf("the producer records outputs %v, want artifact a at %s/a.tgz", out, wantKey)
	}
	in := executorTemplate(t, e.PodOf(done, "repo-default[1].consume")).Inputs.GetArtifactByName("a")
	if in == nil || in.S3 == nil || in.S3.Bucket != "repo-bucket" || in.S3.Key != wantKey+"/a.tgz" || in.Path != "/tmp/a" {
		t.Errorf("the consumer's executor would download %+v, want s3 repo-bucket/%s/a.tgz to /tmp/a", in, wantKey)
	}
}

func TestAnArtifactRepositoryRefThatDoesNotResolveErrorsOnlyItsWorkflow(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.Script{Func: uploadToArchive}})
	e.createRepositories()
	body := `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}` + repoTemplates
	missingCM := e.Submit(`
metadata: {name: repo-no-cm}
spec:
  artifactRepositoryRef: {configMap: gone, key: default-v1}` + body)
	missingKey := e.Submit(`
metadata: {name: repo-no-key}
spec:
  artifactRepositoryRef: {key: nope}` + body)
	good := e.Submit(`
metadata: {name: repo-explicit}
spec:
  artifactRepositoryRef: {configMap: artifact-repositories, key: default-v1}` + body)

	for _, tc := range []struct {
		sentence, name, message string
	}{
		{"a missing ConfigMap", missingCM.Name, `failed to resolve artifact repository: failed to find any artifact repository for artifact repository ref "gone#default-v1"`},
		{"a missing key", missingKey.Name, `failed to resolve artifact repository: failed to find any artifact repository for artifact repository ref "#nope"`},
	} {
		done := e.WaitCompleted(tc.name)
		if done.Status.Phase != wfv1.WorkflowError || done.Status.Message != tc.message || len(done.Status.Nodes) != 0 {
			t.Errorf("%s: workflow %s %q with %d nodes, want Error %q before any node", tc.sentence, done.Status.Phase, done.Status.Message,
				len(done.Status.Nodes), tc.message)
		}
		if got := harness.Messages(e.WaitEvent("", tc.name, "WorkflowFailed")); len(got) != 1 || !strings.Contains(got[0], tc.message) {
			t.Errorf("%s: WorkflowFailed events %q, want one naming the reference", tc.sentence, got)
		}
	}
	done := e.WaitCompleted(good.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded || done.Status.ArtifactRepositoryRef == nil || done.Status.ArtifactRepositoryRef.Key != "default-v1" {
		t.Errorf("a workflow beside them is unaffected: %s %q, ref %+v\n%s", done.Status.Phase, done.Status.Message,
			done.Status.ArtifactRepositoryRef, harness.Describe(done))
	}
}
