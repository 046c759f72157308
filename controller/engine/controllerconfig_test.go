package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controllerconfig"
)

type fixedAdmission bool

func (a fixedAdmission) Admit(*wfv1.Workflow) bool { return bool(a) }

func configOf(t *testing.T, doc string) *config.Config {
	t.Helper()
	cfg := &config.Config{}
	if err := yaml.UnmarshalStrict([]byte(doc), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestControllerConfigAtWorkflowStart(t *testing.T) {
	const defaults = `
workflowDefaults:
  metadata: {labels: {pool: batch}}
  spec:
    serviceAccountName: from-defaults
    tolerations: [{key: pool, operator: Equal, value: batch, effect: NoSchedule}]
    podMetadata: {labels: {tier: batch, team: platform}}
    activeDeadlineSeconds: 600
`
	for _, tc := range []struct {
		sentence  string
		config    string
		admission Admission
		spec      string
		check     func(t *testing.T, wf *wfv1.Workflow, pod *corev1.Pod)
	}{
		{"workflowDefaults fill what the workflow leaves unset and the workflow's own values win", defaults, nil,
			`{entrypoint: main, activeDeadlineSeconds: 60, podMetadata: {labels: {team: data}}, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}`,
			func(t *testing.T, wf *wfv1.Workflow, pod *corev1.Pod) {
				if wf.Spec.ServiceAccountName != "from-defaults" || *wf.Spec.ActiveDeadlineSeconds != 60 || wf.Labels["pool"] != "batch" {
					t.Errorf("merged spec: serviceAccount %q deadline %d labels %v", wf.Spec.ServiceAccountName, *wf.Spec.ActiveDeadlineSeconds, wf.Labels)
				}
				if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "pool" {
					t.Errorf("pod tolerations = %v, want the default's", pod.Spec.Tolerations)
				}
				if pod.Labels["tier"] != "batch" || pod.Labels["team"] != "data" {
					t.Errorf("pod labels = %v, want tier=batch from the defaults and the workflow's team=data", pod.Labels)
				}
			}},
		{"the executor and mainContainer of the config shape the pod; its executor.image is used without --executor-image",
			"executor: {image: example.com/argoexec:v1, resources: {requests: {cpu: 10m}}}\nmainContainer: {resources: {requests: {memory: 32Mi}}}", nil,
			`{entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}`,
			func(t *testing.T, _ *wfv1.Workflow, pod *corev1.Pod) {
				for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers[0]) {
					if c.Image != "example.com/argoexec:v1" || c.Resources.Requests.Cpu().String() != "10m" {
						t.Errorf("%s: image %q requests %v, want the configured executor", c.Name, c.Image, c.Resources.Requests)
					}
				}
				if got := pod.Spec.Containers[1].Resources.Requests.Memory().String(); got != "32Mi" {
					t.Errorf("main memory request = %s, want the mainContainer default 32Mi", got)
				}
			}},
		{"Strict template referencing refuses an inline workflow with argo's message", "workflowRestrictions: {templateReferencing: Strict}", nil,
			`{entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}`,
			func(t *testing.T, wf *wfv1.Workflow, _ *corev1.Pod) {
				if wf.Status.Phase != wfv1.WorkflowError || wf.Status.Message != ReferenceModeMessage {
					t.Errorf("workflow %s %q, want Error %q", wf.Status.Phase, wf.Status.Message, ReferenceModeMessage)
				}
			}},
		{"a workflow beyond parallelism stays Pending with argo's message", "", fixedAdmission(false),
			`{entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}`,
			func(t *testing.T, wf *wfv1.Workflow, pod *corev1.Pod) {
				if wf.Status.Phase != wfv1.WorkflowPending || wf.Status.Message != ThrottledMessage || pod != nil {
					t.Errorf("workflow %s %q (pod %v), want Pending %q and no pod", wf.Status.Phase, wf.Status.Message, pod != nil, ThrottledMessage)
				}
			}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte("metadata: {name: cfg, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}\nspec: "+tc.spec), wf); err != nil {
				t.Fatal(err)
			}
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			e := &Engine{Pods: pods, Config: controllerconfig.Static{Config: configOf(t, tc.config)}, Admission: tc.admission}
			runPass(t, e, wf, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			var pod *corev1.Pod
			for _, p := range pods.created {
				pod = p
			}
			if pod == nil && strings.Contains(tc.sentence, "pod") && tc.admission == nil {
				t.Fatalf("no pod created; workflow %s %q", wf.Status.Phase, wf.Status.Message)
			}
			tc.check(t, wf, pod)
		})
	}
}

// TestThrottledWorkflowStartsOnceAdmitted: a workflow held Pending by parallelism is validated and runs
// when a slot frees, its throttle message gone.
func TestThrottledWorkflowStartsOnceAdmitted(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`{metadata: {name: t, namespace: ns, uid: 22222222-1111-1111-1111-111111111111}, spec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}}`), wf); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, Admission: fixedAdmission(false)}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if runPass(t, e, wf, now) || wf.Status.Phase != wfv1.WorkflowPending {
		t.Fatalf("workflow %s, want Pending", wf.Status.Phase)
	}
	e.Admission = fixedAdmission(true)
	if !runPass(t, e, wf, now) || wf.Status.Phase != wfv1.WorkflowRunning || wf.Status.Message != "" {
		t.Fatalf("workflow %s %q, want Running with no message", wf.Status.Phase, wf.Status.Message)
	}
}

// TestTheControllerArtifactRepositoryIsTheLastDefault: without a reference or a namespace ConfigMap, the
// controller ConfigMap's artifactRepository is stored as the default, and output artifacts go there.
func TestTheControllerArtifactRepositoryIsTheLastDefault(t *testing.T) {
	wf := artifactWorkflow(t, "", plainProducer)
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, ConfigMaps: &fakeConfigMaps{},
		Config: controllerconfig.Static{Config: configOf(t, "artifactRepository: {s3: {bucket: from-controller, endpoint: s3.example.com}}")}}
	runPass(t, e, wf, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	ref := wf.Status.ArtifactRepositoryRef
	if wf.Status.Phase != wfv1.WorkflowRunning || ref == nil || !ref.Default || ref.ArtifactRepository == nil || ref.ArtifactRepository.S3 == nil ||
		ref.ArtifactRepository.S3.Bucket != "from-controller" {
		t.Fatalf("workflow %s %q, artifactRepositoryRef %+v: want Running with the controller's repository as default", wf.Status.Phase, wf.Status.Message, ref)
	}
}

// TestWorkflowDefaultsRankBelowAWorkflowTemplate: for a workflowTemplateRef the stored spec is the
// workflow's, then the template's, then the defaults' values; the defaults' labels reach the workflow.
func TestWorkflowDefaultsRankBelowAWorkflowTemplate(t *testing.T) {
	src := &fakeTemplates{objects: map[string]string{"lib": `
entrypoint: main
serviceAccountName: from-template
templates: [{name: main, container: {image: alpine, command: ["true"]}}]
`}}
	cfg := configOf(t, `
workflowDefaults:
  metadata: {labels: {pool: batch}}
  spec: {serviceAccountName: from-defaults, priority: 3, nodeSelector: {pool: batch}}
`)
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`{metadata: {name: ref, namespace: ns, uid: 33333333-1111-1111-1111-111111111111}, spec: {workflowTemplateRef: {name: lib}, priority: 7}}`), wf); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}, Templates: src, Config: controllerconfig.Static{Config: cfg}}
	runPass(t, e, wf, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	stored := wf.Status.StoredWorkflowSpec
	if wf.Status.Phase != wfv1.WorkflowRunning || stored == nil {
		t.Fatalf("workflow %s %q, want Running with a stored spec", wf.Status.Phase, wf.Status.Message)
	}
	if stored.ServiceAccountName != "from-template" || *stored.Priority != 7 || stored.NodeSelector["pool"] != "batch" {
		t.Errorf("stored spec: serviceAccount %q priority %d nodeSelector %v; want the template's account, the workflow's priority, the defaults' nodeSelector",
			stored.ServiceAccountName, *stored.Priority, stored.NodeSelector)
	}
	if wf.Labels["pool"] != "batch" {
		t.Errorf("workflow labels = %v, want the defaults' pool=batch", wf.Labels)
	}
}

// TestAPodGCFromAWorkflowTemplateOrTheWorkflowDefaultsRuns: argo reads podGC from the spec the workflow
// runs (its execWf), so one that comes from a referenced WorkflowTemplate or the ConfigMap's
// workflowDefaults starts the workflow, is stored in its merged spec and names its pods' strategy.
func TestAPodGCFromAWorkflowTemplateOrTheWorkflowDefaultsRuns(t *testing.T) {
	const lib = `
entrypoint: main
templates: [{name: main, container: {image: alpine, command: ["true"]}}]
`
	for _, tc := range []struct {
		sentence, template, defaults, own string
		want                              string // the pods' workflows.argoproj.io/pod-gc-strategy
	}{
		{"a WorkflowTemplate's podGC", "podGC: {strategy: OnPodSuccess, deleteDelayDuration: 30s}" + lib, "", "", "OnPodSuccess/30s"},
		{"the workflowDefaults' podGC", lib, "workflowDefaults: {spec: {podGC: {strategy: OnPodCompletion}}}", "", "OnPodCompletion/"},
		{"the template's podGC over the workflowDefaults'", "podGC: {strategy: OnWorkflowSuccess}" + lib,
			"workflowDefaults: {spec: {podGC: {strategy: OnPodCompletion}}}", "", "OnWorkflowSuccess/"},
		{"the workflow's own podGC over the template's", "podGC: {strategy: OnWorkflowSuccess}" + lib, "",
			", podGC: {strategy: OnPodSuccess}", "OnPodSuccess/"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			doc := `{metadata: {name: ref, namespace: ns, uid: 33333333-1111-1111-1111-111111111111}, spec: {workflowTemplateRef: {name: lib}` + tc.own + `}}`
			if err := yaml.UnmarshalStrict([]byte(doc), wf); err != nil {
				t.Fatal(err)
			}
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			e := &Engine{Pods: pods, Templates: &fakeTemplates{objects: map[string]string{"lib": tc.template}},
				Config: controllerconfig.Static{Config: configOf(t, tc.defaults)}}
			runPass(t, e, wf, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			if wf.Status.Phase != wfv1.WorkflowRunning {
				t.Fatalf("workflow %s %q, want Running", wf.Status.Phase, wf.Status.Message)
			}
			if len(pods.created) != 1 {
				t.Fatalf("%d pods created, want 1", len(pods.created))
			}
			for _, pod := range pods.created {
				if got := pod.Annotations[common.AnnotationKeyPodGCStrategy]; got != tc.want {
					t.Errorf("pod-gc-strategy %q, want %q", got, tc.want)
				}
			}
			if wf.Spec.PodGC != nil && tc.own == "" {
				t.Errorf("the workflow's own spec was given podGC %+v", wf.Spec.PodGC)
			}
		})
	}
}
