package engine

import (
	"context"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
)

// fakeConfigMaps serves ConfigMaps by namespace/name and counts reads.
type fakeConfigMaps struct {
	objects map[string]*corev1.ConfigMap
	// cached is what a read that allows the cache sees, when set: a cache that may trail objects.
	cached     map[string]*corev1.ConfigMap
	err        error
	reads      int
	freshReads int
}

func (f *fakeConfigMaps) ConfigMap(_ context.Context, namespace, name string, fresh bool) (*corev1.ConfigMap, error) {
	f.reads++
	if fresh {
		f.freshReads++
	}
	if f.err != nil {
		return nil, f.err
	}
	objects := f.objects
	if !fresh && f.cached != nil {
		objects = f.cached
	}
	cm, ok := objects[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return cm.DeepCopy(), nil
}

const s3Repo = `s3: {bucket: art, endpoint: "minio:9000", insecure: true, accessKeySecret: {name: minio-cred, key: accesskey}}`

func repoConfigMap(ns, name, defaultKey string, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if defaultKey != "" {
		cm.Annotations = map[string]string{AnnotationDefaultArtifactRepository: defaultKey}
	}
	return cm
}

func artifactWorkflow(t *testing.T, ref, producer string) *wfv1.Workflow {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: arts, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
`+ref+`
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
`+producer), wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

const plainProducer = `
  - name: produce
    container: {image: alpine, command: ["true"]}
    outputs: {artifacts: [{name: a, path: /tmp/a}]}
`

// dataProducer lists a bucket given without endpoint nor key, as argo's data-transformations example does.
const dataProducer = `
  - name: produce
    data:
      source: {artifactPaths: {name: logs, s3: {bucket: my-bucket}}}
      transformation: [{expression: 'filter(data, {# endsWith "main.log"})'}]
`

func TestTheArtifactRepositoryIsResolvedOnceAtStart(t *testing.T) {
	standard := map[string]*corev1.ConfigMap{
		"ns/artifact-repositories": repoConfigMap("ns", "artifact-repositories", "default-v1", map[string]string{
			"default-v1": s3Repo, "other": `gcs: {bucket: g}`, "broken": `s3: [`}),
		"ns/my-repos":    repoConfigMap("ns", "my-repos", "", map[string]string{"k": `s3: {bucket: mine}`}),
		"other/my-repos": repoConfigMap("other", "my-repos", "", map[string]string{"k": `s3: {bucket: elsewhere}`}),
	}
	for _, tc := range []struct {
		sentence string
		objects  map[string]*corev1.ConfigMap
		ref      string
		producer string
		want     wfv1.ArtifactRepositoryRefStatus // status.artifactRepositoryRef without the repository
		bucket   string                           // the resolved repository's bucket ("" = none)
		phase    wfv1.WorkflowPhase
		message  string
	}{
		{"without a reference, the namespace's artifact-repositories ConfigMap's default key is used", standard, "", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{Namespace: "ns", ArtifactRepositoryRef: wfv1.ArtifactRepositoryRef{ConfigMap: "artifact-repositories", Key: "default-v1"}},
			"art", wfv1.WorkflowRunning, ""},
		{"a reference naming a ConfigMap and key in the workflow's namespace is used", standard, "  artifactRepositoryRef: {configMap: my-repos, key: k}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{Namespace: "ns", ArtifactRepositoryRef: wfv1.ArtifactRepositoryRef{ConfigMap: "my-repos", Key: "k"}},
			"mine", wfv1.WorkflowRunning, ""},
		{"a reference naming only a key reads it from artifact-repositories", standard, "  artifactRepositoryRef: {key: other}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{Namespace: "ns", ArtifactRepositoryRef: wfv1.ArtifactRepositoryRef{ConfigMap: "artifact-repositories", Key: "other"}},
			"g", wfv1.WorkflowRunning, ""},
		{"a reference naming only a ConfigMap uses its annotated default key", standard, "  artifactRepositoryRef: {configMap: artifact-repositories}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{Namespace: "ns", ArtifactRepositoryRef: wfv1.ArtifactRepositoryRef{ConfigMap: "artifact-repositories", Key: "default-v1"}},
			"art", wfv1.WorkflowRunning, ""},
		{"without a reference or ConfigMap, a workflow with no artifacts runs with argo's default reference", nil, "", `  - {name: produce, container: {image: alpine, command: ["true"]}}`,
			wfv1.ArtifactRepositoryRefStatus{Default: true}, "", wfv1.WorkflowRunning, ""},
		{"a ConfigMap without the default annotation is not a repository", map[string]*corev1.ConfigMap{
			"ns/artifact-repositories": repoConfigMap("ns", "artifact-repositories", "", map[string]string{"x": s3Repo})}, "", `  - {name: produce, container: {image: alpine, command: ["true"]}}`,
			wfv1.ArtifactRepositoryRefStatus{Default: true}, "", wfv1.WorkflowRunning, ""},
		{"a reference to a missing ConfigMap errors the workflow with argo's message", nil, "  artifactRepositoryRef: {configMap: gone, key: k}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{}, "", wfv1.WorkflowError,
			`failed to resolve artifact repository: failed to find any artifact repository for artifact repository ref "gone#k"`},
		{"a reference to a missing key errors the workflow with argo's message", standard, "  artifactRepositoryRef: {configMap: my-repos, key: nope}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{}, "", wfv1.WorkflowError,
			`failed to resolve artifact repository: failed to find any artifact repository for artifact repository ref "my-repos#nope"`},
		{"a repository that does not parse errors the workflow naming the key", standard, "  artifactRepositoryRef: {key: broken}", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{}, "", wfv1.WorkflowError,
			`failed to resolve artifact repository: error getting config map for artifact repository ref "ns/#broken": failed to unmarshall config map key "broken" for artifact repository ref "ns/#broken": ` +
				`error converting YAML to JSON: yaml: line 1: did not find expected node content`},
		{"an output artifact without a location and no repository fails the workflow naming it", nil, "", plainProducer,
			wfv1.ArtifactRepositoryRefStatus{Default: true}, "", wfv1.WorkflowFailed,
			"invalid spec: no artifact repository for output artifacts without a location (template produce: outputs.artifacts.a): set spec.artifactRepositoryRef, " +
				"or create ConfigMap artifact-repositories in namespace ns with the workflows.argoproj.io/default-artifact-repository annotation naming its key"},
	} {
		wf := artifactWorkflow(t, tc.ref, tc.producer)
		cms := &fakeConfigMaps{objects: tc.objects}
		e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, ConfigMaps: cms}
		p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Now(), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
		if _, err := e.Start(p); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		if wf.Status.Phase != tc.phase || wf.Status.Message != tc.message {
			t.Errorf("%s: workflow %s %q, want %s %q", tc.sentence, wf.Status.Phase, wf.Status.Message, tc.phase, tc.message)
		}
		got := wf.Status.ArtifactRepositoryRef
		if tc.phase == wfv1.WorkflowError {
			if got != nil {
				t.Errorf("%s: an unresolved reference was stored: %+v", tc.sentence, got)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: status.artifactRepositoryRef not set", tc.sentence)
			continue
		}
		bare := *got
		bare.ArtifactRepository = nil
		if bare != tc.want {
			t.Errorf("%s: status.artifactRepositoryRef = %+v, want %+v", tc.sentence, bare, tc.want)
		}
		bucket := ""
		if r := artifactRepository(wf); r != nil {
			switch {
			case r.S3 != nil:
				bucket = r.S3.Bucket
			case r.GCS != nil:
				bucket = r.GCS.Bucket
			}
		}
		if bucket != tc.bucket {
			t.Errorf("%s: stored repository's bucket %q, want %q", tc.sentence, bucket, tc.bucket)
		}
		// Resolved once: later passes read nothing, even when the ConfigMap changes or goes away.
		reads := cms.reads
		cms.objects = nil
		p = &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Now(), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
		if err := e.Execute(context.Background(), p); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		if cms.reads != reads || wf.Status.ArtifactRepositoryRef.Default != tc.want.Default {
			t.Errorf("%s: the repository was read again mid-run (%d reads)", tc.sentence, cms.reads-reads)
		}
	}
}

func TestACacheThatMissesTheNamespacesRepositoryIsReadPastOnlyBeforeFailing(t *testing.T) {
	created := map[string]*corev1.ConfigMap{ // created a moment ago: not in the cache yet
		"ns/artifact-repositories": repoConfigMap("ns", "artifact-repositories", "default-v1", map[string]string{"default-v1": s3Repo})}
	noArtifacts := `  - {name: produce, container: {image: alpine, command: ["true"]}}`
	for _, tc := range []struct {
		sentence   string
		objects    map[string]*corev1.ConfigMap
		producer   string
		freshReads int
		phase      wfv1.WorkflowPhase
		defaultRef bool // status.artifactRepositoryRef is argo's default rather than the ConfigMap
		specRef    string
	}{
		{"a workflow that needs a repository finds the new ConfigMap past the cache", created, plainProducer, 1, wfv1.WorkflowRunning, false, ""},
		{"a workflow that needs none starts from the cache alone", created, noArtifacts, 0, wfv1.WorkflowRunning, true, ""},
		{"a workflow that needs one that is nowhere fails after one read past the cache", nil, plainProducer, 1, wfv1.WorkflowFailed, true, ""},
		{"a reference to the new ConfigMap resolves past the cache", created, noArtifacts, 1, wfv1.WorkflowRunning, false,
			"  artifactRepositoryRef: {configMap: artifact-repositories}"},
	} {
		wf := artifactWorkflow(t, tc.specRef, tc.producer)
		cms := &fakeConfigMaps{objects: tc.objects, cached: map[string]*corev1.ConfigMap{}}
		e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, ConfigMaps: cms}
		p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Now(), Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
		if _, err := e.Start(p); err != nil {
			t.Fatalf("%s: %v", tc.sentence, err)
		}
		ref := wf.Status.ArtifactRepositoryRef
		if wf.Status.Phase != tc.phase || cms.freshReads != tc.freshReads || ref == nil || ref.Default != tc.defaultRef {
			t.Errorf("%s: phase %s, %d reads past the cache, artifactRepositoryRef %+v; want %s, %d, default %t",
				tc.sentence, wf.Status.Phase, cms.freshReads, ref, tc.phase, tc.freshReads, tc.defaultRef)
		}
	}
}

func TestATransientConfigMapReadIsRetriedNotFatal(t *testing.T) {
	wf := artifactWorkflow(t, "", plainProducer)
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, ConfigMaps: &fakeConfigMaps{err: apierrors.NewServiceUnavailable("etcd is down")}}
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Now()}
	if ok, err := e.Start(p); ok || err == nil || wf.Status.Phase != wfv1.WorkflowUnknown || wf.Status.ArtifactRepositoryRef != nil {
		t.Errorf("Start = %v, %v; phase %q: want a retried error and an untouched workflow", ok, err, wf.Status.Phase)
	}
}

func TestAPodGetsTheRepositorysArchiveLocationWithArgosKey(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		repo     string // the ConfigMap key's value
		producer string
		want     *wfv1.ArtifactLocation // the producer's ARGO_TEMPLATE archiveLocation; nil = none
		nodeErr  string                 // the producer node's error instead
	}{
		{"an output artifact without a location gets the repository's location, keyed {{workflow.name}}/{{pod.name}}", s3Repo, plainProducer,
			&wfv1.ArtifactLocation{ArchiveLogs: ptrBool(false), S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "art", Endpoint: "minio:9000", Insecure: ptrBool(true),
				AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "minio-cred"}, Key: "accesskey"}}, Key: "arts/PODNAME"}}, ""},
		{"a keyFormat is substituted with workflow variables and the pod name", `s3: {bucket: art, keyFormat: "{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}"}`, plainProducer,
			&wfv1.ArtifactLocation{ArchiveLogs: ptrBool(false), S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "art"}, Key: "ns/arts/PODNAME"}}, ""},
		{"the deprecated keyPrefix is prepended to argo's default key", `s3: {bucket: art, keyPrefix: pre}`, plainProducer,
			&wfv1.ArtifactLocation{ArchiveLogs: ptrBool(false), S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "art"}, Key: "pre/arts/PODNAME"}}, ""},
		{"archiveLogs in the repository is kept on", `{archiveLogs: true, gcs: {bucket: g}}`, plainProducer,
			&wfv1.ArtifactLocation{ArchiveLogs: ptrBool(true), GCS: &wfv1.GCSArtifact{GCSBucket: wfv1.GCSBucket{Bucket: "g"}, Key: "arts/PODNAME"}}, ""},
		{"a template's own archiveLocation is kept", s3Repo, `
  - name: produce
    archiveLocation: {s3: {bucket: own, endpoint: "e:1", key: "own/key"}}
    container: {image: alpine, command: ["true"]}
    outputs: {artifacts: [{name: a, path: /tmp/a}]}`,
			&wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "own", Endpoint: "e:1"}, Key: "own/key"}}, ""},
		{"a template whose artifacts all have locations gets no archiveLocation", s3Repo, `
  - name: produce
    container: {image: alpine, command: ["true"]}
    outputs: {artifacts: [{name: a, path: /tmp/a, s3: {bucket: b, endpoint: "e:1", key: k}}]}`, nil, ""},
		{"a data template's source without a location gets the repository's location, which argoexec data completes it from", s3Repo, dataProducer,
			&wfv1.ArtifactLocation{ArchiveLogs: ptrBool(false), S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "art", Endpoint: "minio:9000", Insecure: ptrBool(true),
				AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "minio-cred"}, Key: "accesskey"}}, Key: "arts/PODNAME"}}, ""},
		{"a keyFormat naming an unknown variable errors the node with argo's message", `s3: {bucket: art, keyFormat: "{{workflow.nope}}/x"}`, plainProducer,
			nil, "failed to resolve {{workflow.nope}}"},
	} {
		wf := artifactWorkflow(t, "", tc.producer)
		pods := &recordingPods{created: map[string]*corev1.Pod{}}
		e := &Engine{Pods: pods, ConfigMaps: &fakeConfigMaps{objects: map[string]*corev1.ConfigMap{
			"ns/artifact-repositories": repoConfigMap("ns", "artifact-repositories", "r", map[string]string{"r": tc.repo})}}}
		runPass(t, e, wf, time.Now())
		id := wf.NodeID("arts[0].produce")
		if tc.nodeErr != "" {
			if n := p0(wf, "arts[0].produce"); n == nil || n.Phase != wfv1.NodeError || n.Message != tc.nodeErr {
				t.Errorf("%s: node %+v, want Error %q", tc.sentence, n, tc.nodeErr)
			}
			continue
		}
		pod := pods.created[id]
		if pod == nil {
			t.Fatalf("%s: no pod: %s %s", tc.sentence, wf.Status.Message, describeNodes(wf))
		}
		got := templateOfPod(t, pod).ArchiveLocation
		want := tc.want
		if want != nil && want.S3 != nil {
			want = want.DeepCopy()
			want.S3.Key = replacePodName(want.S3.Key, podspec.PodName(wf.Name, "arts[0].produce", "produce", id))
		}
		if want != nil && want.GCS != nil {
			want = want.DeepCopy()
			want.GCS.Key = replacePodName(want.GCS.Key, podspec.PodName(wf.Name, "arts[0].produce", "produce", id))
		}
		gotJSON, _ := yaml.Marshal(got)
		wantJSON, _ := yaml.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: archiveLocation\n%s\nwant\n%s", tc.sentence, gotJSON, wantJSON)
		}
		if want != nil && want.S3 != nil && want.S3.AccessKeySecret != nil && !hasVolume(pod, "minio-cred") {
			t.Errorf("%s: the repository's secret is not mounted for argoexec: %+v", tc.sentence, pod.Spec.Volumes)
		}
	}
}

func ptrBool(b bool) *bool { return &b }

func replacePodName(key, pod string) string {
	const marker = "PODNAME"
	if i := len(key) - len(marker); i >= 0 && key[i:] == marker {
		return key[:i] + pod
	}
	return key
}

func hasVolume(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}
