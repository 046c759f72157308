package podspec

import (
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// testNow is a fixed clock so activeDeadlineSeconds is stable in golden files.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testWorkflow() *wfv1.Workflow {
	return &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "wf-abc", Namespace: "argo", UID: "0b4c6a2e-1f0d-4e7a-9c61-3d2b5e8f7a10"},
		Spec: wfv1.WorkflowSpec{
			ServiceAccountName: "workflow-sa",
			Volumes: []corev1.Volume{
				{Name: "workdir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "unused", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			},
		},
	}
}

func containerTemplate() *wfv1.Template {
	return &wfv1.Template{
		Name: "hello",
		Inputs: wfv1.Inputs{
			Parameters: []wfv1.Parameter{{Name: "greeting", Value: wfv1.AnyStringPtr("hi")}},
		},
		Outputs: wfv1.Outputs{
			Parameters: []wfv1.Parameter{{Name: "out", ValueFrom: &wfv1.ValueFrom{Path: "/work/out.txt"}}},
		},
		Container: &corev1.Container{
			Image:   "alpine:3.20",
			Command: []string{"sh", "-c"},
			Args:    []string{"echo hi > /work/out.txt"},
			Env:     []corev1.EnvVar{{Name: "GREETING", Value: "hi"}},
			Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "workdir", MountPath: "/work"}},
		},
	}
}

func scriptTemplate() *wfv1.Template {
	return &wfv1.Template{
		Name: "gen",
		Script: &wfv1.ScriptTemplate{
			Container: corev1.Container{Image: "python:3.12-alpine", Command: []string{"python"}},
			Source:    "import random\nprint(random.randint(1, 100))\n",
		},
	}
}

func containerInput() Input {
	return Input{
		Workflow: testWorkflow(),
		NodeName: "wf-abc.a",
		NodeID:   testWorkflow().NodeID("wf-abc.a"),
		Template: containerTemplate(),
		Now:      testNow,
	}
}

func scriptInput() Input {
	return Input{
		Workflow:            testWorkflow(),
		NodeName:            "wf-abc[0].gen",
		NodeID:              testWorkflow().NodeID("wf-abc[0].gen"),
		Template:            scriptTemplate(),
		IncludeScriptOutput: true,
		Now:                 testNow,
	}
}

// fullInput exercises every pod-level option: metadata from workflow and
// template, instance ID, exit handler, finalizer, deadline, pod GC and the
// template-over-workflow scheduling rules.
func fullInput() Input {
	wf := testWorkflow()
	wf.Spec.PodMetadata = &wfv1.Metadata{
		Labels:      map[string]string{"team": "data", "tier": "batch"},
		Annotations: map[string]string{"example.com/owner": "data-team"},
	}
	wf.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	wf.Spec.Tolerations = []corev1.Toleration{{Key: "workflow-only", Operator: corev1.TolerationOpExists}}
	wf.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	wf.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	wf.Spec.PodPriorityClassName = "batch-low"
	wf.Spec.SchedulerName = "custom-scheduler"
	wf.Spec.HostNetwork = ptr.To(false)
	wf.Spec.DNSPolicy = ptr.To(corev1.DNSClusterFirst)
	wf.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db.internal"}}}

	tmpl := containerTemplate()
	tmpl.Metadata = wfv1.Metadata{
		Labels:      map[string]string{"tier": "critical"},
		Annotations: map[string]string{"example.com/step": "hello"},
	}
	tmpl.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	tmpl.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](2000)}
	tmpl.ServiceAccountName = "step-sa"
	tmpl.ActiveDeadlineSeconds = ptr.To(intstr.FromInt32(300))

	return Input{
		Workflow:        wf,
		NodeName:        "wf-abc.onExit",
		NodeID:          testWorkflow().NodeID("wf-abc.onExit"),
		Template:        tmpl,
		ExecutorImage:   "registry.example.com/argoexec:v3.7.9",
		InstanceID:      "staging",
		Deadline:        testNow.Add(90*time.Second + 500*time.Millisecond),
		Now:             testNow,
		StatusFinalizer: true,
		OnExit:          true,
		PodGCStrategy:   "OnPodSuccess/30s",
	}
}

// artifactsInput covers what argo adds around main for artifacts, user init
// containers, sidecars and a podSpecPatch.
func artifactsInput() Input {
	tmpl := containerTemplate()
	s3 := func(key string) wfv1.ArtifactLocation {
		return wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{
			S3Bucket: wfv1.S3Bucket{
				Endpoint:        "minio:9000",
				Bucket:          "artifacts",
				AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-creds"}, Key: "accesskey"},
				SecretKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-creds"}, Key: "secretkey"},
			},
			Key: key,
		}}
	}
	tmpl.Inputs.Artifacts = []wfv1.Artifact{
		{Name: "dataset", Path: "/data/in", ArtifactLocation: s3("dataset.tgz")},
		{Name: "config", Path: "/work/config.yaml", ArtifactLocation: wfv1.ArtifactLocation{
			Git: &wfv1.GitArtifact{Repo: "https://example.com/cfg.git", PasswordSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "git-creds"}, Key: "token"}},
		}},
		{Name: "optional-extra", Path: "/data/extra", Optional: true},
	}
	tmpl.Outputs.Artifacts = []wfv1.Artifact{{Name: "result", Path: "/data/out", ArtifactLocation: s3("result.tgz")}}
	tmpl.InitContainers = []wfv1.UserContainer{{
		Container:          corev1.Container{Name: "prepare", Image: "busybox:1.36", Command: []string{"true"}},
		MirrorVolumeMounts: ptr.To(true),
	}}
	tmpl.Sidecars = []wfv1.UserContainer{{
		Container: corev1.Container{Name: "proxy", Image: "envoyproxy/envoy:v1.30", Command: []string{"envoy"}, Args: []string{"-c", "/etc/envoy.yaml"}},
	}}
	tmpl.PodSpecPatch = "terminationGracePeriodSeconds: 30\n"

	in := containerInput()
	in.Template = tmpl
	return in
}

// resourceTemplate is a resource template; the inputs below vary its action.
func resourceTemplate(res *wfv1.ResourceTemplate) *wfv1.Template {
	return &wfv1.Template{Name: "apply", Resource: res}
}

func resourceInput(tmpl *wfv1.Template) Input {
	return Input{
		Workflow: testWorkflow(),
		NodeName: "wf-abc.r",
		NodeID:   testWorkflow().NodeID("wf-abc.r"),
		Template: tmpl,
		Now:      testNow,
	}
}

// resourceCreateInput creates a Job owned by the workflow and reads two
// outputs from it; argoexec evaluates the conditions.
func resourceCreateInput() Input {
	tmpl := resourceTemplate(&wfv1.ResourceTemplate{
		Action:            "create",
		SetOwnerReference: true,
		SuccessCondition:  "status.succeeded > 2",
		FailureCondition:  "status.failed > 1",
		Manifest:          "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: rand-num-\nspec:\n  completions: 3\n",
	})
	tmpl.Outputs.Parameters = []wfv1.Parameter{
		{Name: "job-name", ValueFrom: &wfv1.ValueFrom{JSONPath: "{.metadata.name}"}},
		{Name: "job-obj", ValueFrom: &wfv1.ValueFrom{JQFilter: "."}},
	}
	return resourceInput(tmpl)
}

// resourcePatchInput patches the pod itself, named through {{pod.name}}, with
// a JSON patch and kubectl flags.
func resourcePatchInput() Input {
	return resourceInput(resourceTemplate(&wfv1.ResourceTemplate{
		Action:        "patch",
		MergeStrategy: "json",
		Flags:         []string{"pod", "{{pod.name}}"},
		Manifest:      "- op: add\n  path: /metadata/annotations/foo\n  value: bar\n",
	}))
}

// resourceManifestFromInput applies a manifest that init downloads as an
// input artifact, under its own service account, with logs archived (which
// is when a resource pod gets a wait container).
func resourceManifestFromInput() Input {
	tmpl := resourceTemplate(&wfv1.ResourceTemplate{
		Action:       "apply",
		ManifestFrom: &wfv1.ManifestFrom{Artifact: &wfv1.Artifact{Name: "manifest"}},
	})
	creds := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-creds"}, Key: "accesskey"}
	tmpl.Inputs.Artifacts = []wfv1.Artifact{{Name: "manifest", Path: "/tmp/manifest.yaml", ArtifactLocation: wfv1.ArtifactLocation{
		S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Endpoint: "minio:9000", Bucket: "manifests", AccessKeySecret: creds}, Key: "cm.yaml"},
	}}}
	tmpl.ArchiveLocation = &wfv1.ArtifactLocation{ArchiveLogs: ptr.To(true), S3: &wfv1.S3Artifact{
		S3Bucket: wfv1.S3Bucket{Endpoint: "minio:9000", Bucket: "logs", AccessKeySecret: creds}, Key: "wf-abc/logs",
	}}
	tmpl.ServiceAccountName = "deployer"
	return resourceInput(tmpl)
}

// dataInput lists an S3 bucket through argoexec data, the source completed
// from the archive location (as argo fills it from the artifact repository)
// whose credentials main reads.
func dataInput() Input {
	creds := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "minio-cred"}, Key: "accesskey"}
	tmpl := &wfv1.Template{Name: "list-log-files", Data: &wfv1.Data{
		Source:         wfv1.DataSource{ArtifactPaths: &wfv1.ArtifactPaths{Artifact: wfv1.Artifact{Name: "logs", ArtifactLocation: wfv1.ArtifactLocation{S3: &wfv1.S3Artifact{S3Bucket: wfv1.S3Bucket{Bucket: "my-bucket"}}}}}},
		Transformation: wfv1.Transformation{{Expression: `filter(data, {# endsWith "main.log"})`}},
	}}
	tmpl.ArchiveLocation = &wfv1.ArtifactLocation{ArchiveLogs: ptr.To(false), S3: &wfv1.S3Artifact{
		S3Bucket: wfv1.S3Bucket{Endpoint: "minio:9000", Bucket: "artifacts", AccessKeySecret: creds}, Key: "wf-abc/wf-abc-list-log-files-1",
	}}
	return Input{
		Workflow:            testWorkflow(),
		NodeName:            "wf-abc.d",
		NodeID:              testWorkflow().NodeID("wf-abc.d"),
		Template:            tmpl,
		IncludeScriptOutput: true,
		Now:                 testNow,
	}
}

// containerSetTemplate is argo's workspace example with commands: two containers sharing a volume
// through the set's volumeMounts, b after a, and outputs read from the shared volume.
func containerSetTemplate() *wfv1.Template {
	return &wfv1.Template{
		Name:    "main",
		Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		ContainerSet: &wfv1.ContainerSetTemplate{
			VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}},
			Containers: []wfv1.ContainerNode{
				{Container: corev1.Container{Name: "a", Image: "argoproj/argosay:v2", Command: []string{"/argosay"}, Args: []string{"echo", "hi", "/workspace/out"}}},
				{Container: corev1.Container{Name: "b", Image: "argoproj/argosay:v2", Command: []string{"/argosay"}}, Dependencies: []string{"a"}},
			},
		},
		Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", ValueFrom: &wfv1.ValueFrom{Path: "/workspace/out"}}}},
	}
}

func containerSetInput() Input {
	in := containerInput()
	in.Template = containerSetTemplate()
	return in
}

// configuredExecutorInput is a container template run by a controller whose ConfigMap sets executor and
// mainContainer.
func configuredExecutorInput() Input {
	in := containerInput()
	in.ExecutorImage = "registry.example.com/argoexec:v3.7.9"
	in.Executor = &corev1.Container{
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
		Args:            []string{"--gloglevel", "2"},
		Env:             []corev1.EnvVar{{Name: "EXECUTOR_TRACE", Value: "1"}},
	}
	in.MainContainer = &corev1.Container{
		ImagePullPolicy: corev1.PullAlways,
		Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Env:             []corev1.EnvVar{{Name: "FROM_DEFAULTS", Value: "yes"}},
	}
	return in
}

// executorAccountInput is argo's documented hardening: the pod's own token off
// (automountServiceAccountToken: false) and argoexec given the token of an
// executor ServiceAccount, whose Secret the caller found.
func executorAccountInput() Input {
	in := containerInput()
	in.Workflow.Spec.AutomountServiceAccountToken = ptr.To(false)
	in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "executor"}
	in.ExecutorTokenSecret = "executor.service-account-token"
	return in
}

// executorAccountResourceInput names the executor ServiceAccount on the
// template: a resource pod's main runs argoexec, so it acts with that token too.
func executorAccountResourceInput() Input {
	in := resourceCreateInput()
	in.Template.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "deployer-exec"}
	in.ExecutorTokenSecret = "deployer-exec-token-x7k2p"
	return in
}
