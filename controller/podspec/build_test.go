package podspec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestBuildRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(in *Input)
		wantErr string
	}{
		{"a nil workflow is rejected", func(in *Input) { in.Workflow = nil }, "workflow is nil"},
		{"a nil template is rejected", func(in *Input) { in.Template = nil }, "template is nil"},
		{"a workflow without a UID is rejected", func(in *Input) { in.Workflow.UID = "" }, "workflow wf-abc has no UID"},
		{"an empty node ID is rejected", func(in *Input) { in.NodeID = "" }, "node ID is empty"},
		{"a deadline without a clock is rejected", func(in *Input) { in.Deadline, in.Now = testNow, time.Time{} }, "Now is zero"},
		{
			"a template with neither container nor script is rejected",
			func(in *Input) { in.Template = &wfv1.Template{Name: "empty"} },
			"template empty has neither a container nor a script",
		},
		{
			"a steps template is rejected because it runs no pod",
			func(in *Input) { in.Template = &wfv1.Template{Name: "outer", Steps: []wfv1.ParallelSteps{}} },
			"template outer is a Steps template; only container, script, resource and data templates",
		},
		{
			"a container without an image is rejected",
			func(in *Input) { in.Template.Container.Image = "" },
			"template hello: container has no image",
		},
		{
			"a container without a command is rejected because image entrypoints cannot be looked up",
			func(in *Input) { in.Template.Container.Command = nil },
			`failed to look-up entrypoint/cmd for image "alpine:3.20", you must either explicitly specify the command, or list the image's command in the index: https://argo-workflows.readthedocs.io/en/latest/workflow-executors/#emissary-emissary: wfguard does not look up image entrypoints (template hello, container)`,
		},
		{
			"a script without a command is rejected the same way",
			func(in *Input) { in.Template = scriptTemplate(); in.Template.Script.Command = nil },
			"wfguard does not look up image entrypoints (template gen, container)",
		},
		{
			"an inline template without a command is named as inline",
			func(in *Input) { in.Template.Name = ""; in.Template.Container.Command = nil },
			"wfguard does not look up image entrypoints (inline template, container)",
		},
		{
			"a sidecar without a command is rejected and named",
			func(in *Input) {
				in.Template.Sidecars = []wfv1.UserContainer{{Container: corev1.Container{Name: "proxy", Image: "envoy"}}}
			},
			`failed to look-up entrypoint/cmd for image "envoy", you must either explicitly specify the command, or list the image's command in the index: https://argo-workflows.readthedocs.io/en/latest/workflow-executors/#emissary-emissary: wfguard does not look up image entrypoints (template hello, container proxy)`,
		},
		{
			"a containerSet container without a command is rejected as argo's entrypoint look-up fails, naming the container",
			func(in *Input) {
				in.Template = containerSetTemplate()
				in.Template.ContainerSet.Containers[1].Command = nil
			},
			`failed to look-up entrypoint/cmd for image "argoproj/argosay:v2", you must either explicitly specify the command, or list the image's command in the index: https://argo-workflows.readthedocs.io/en/latest/workflow-executors/#emissary-emissary: wfguard does not look up image entrypoints (template main, container b)`,
		},
		{
			"a containerSet without containers is rejected",
			func(in *Input) { in.Template = containerSetTemplate(); in.Template.ContainerSet.Containers = nil },
			"template main: containerSet has no containers",
		},
		{
			"a containerSet container named like argoexec's wait container is rejected",
			func(in *Input) {
				in.Template = containerSetTemplate()
				in.Template.ContainerSet.Containers[0].Name = "wait"
			},
			`template main: containerSet container name "wait" is used twice or is reserved for argoexec`,
		},
		{
			"two containerSet containers of one name are rejected",
			func(in *Input) {
				in.Template = containerSetTemplate()
				in.Template.ContainerSet.Containers[1].Name = "a"
			},
			`template main: containerSet container name "a" is used twice`,
		},
		{
			"a user init container without an image is rejected and named",
			func(in *Input) {
				in.Template.InitContainers = []wfv1.UserContainer{{Container: corev1.Container{Name: "prepare"}}}
			},
			"template hello: container prepare has no image",
		},
		{
			"a mount of an undeclared volume is rejected",
			func(in *Input) {
				in.Template.Container.VolumeMounts = append(in.Template.Container.VolumeMounts, corev1.VolumeMount{Name: "ghost", MountPath: "/ghost"})
			},
			`template hello: volume "ghost" is mounted but not declared`,
		},
		{
			"a template activeDeadlineSeconds that is not a number is rejected",
			func(in *Input) { in.Template.ActiveDeadlineSeconds = ptr.To(intstr.FromString("soon")) },
			`template hello: activeDeadlineSeconds "soon" is not a whole number of seconds`,
		},
		{
			"a template activeDeadlineSeconds below one second is rejected",
			func(in *Input) { in.Template.ActiveDeadlineSeconds = ptr.To(intstr.FromInt32(0)) },
			"activeDeadlineSeconds must be at least 1, got 0",
		},
		{
			"an executor service account without the Secret of its token is rejected: the caller looks it up",
			func(in *Input) { in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "exec"} },
			"template hello: executor.serviceAccountName exec: the Secret holding its token was not given",
		},
		{
			"turning off the service account token without an executor service account is rejected with argo's message",
			func(in *Input) { in.Template.AutomountServiceAccountToken = ptr.To(false) },
			"executor.serviceAccountName must not be empty if automountServiceAccountToken is false",
		},
		{
			"a podSpecPatch that is not a pod spec is rejected",
			func(in *Input) { in.Template.PodSpecPatch = "containers: not-a-list" },
			"template hello: podSpecPatch",
		},
		{
			"an input artifact without a path is rejected",
			func(in *Input) { in.Template.Inputs.Artifacts = []wfv1.Artifact{{Name: "data"}} },
			"template hello: input artifact data:",
		},
		{
			"a resource template without an action is rejected",
			func(in *Input) {
				in.Template.Container = nil
				in.Template.Resource = &wfv1.ResourceTemplate{Manifest: "kind: ConfigMap"}
			},
			"template hello: resource.action is empty",
		},
		{
			"a setOwnerReference manifest that is not an object with a kind is rejected",
			func(in *Input) {
				in.Template.Container = nil
				in.Template.Resource = &wfv1.ResourceTemplate{Action: "create", SetOwnerReference: true, Manifest: "metadata: {name: x}"}
			},
			"Object 'Kind' is missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := containerInput()
			tt.modify(&in)
			pod, err := Build(in)
			if err == nil {
				t.Fatalf("Build succeeded, want an error containing %q", tt.wantErr)
			}
			if pod != nil {
				t.Errorf("Build returned a pod along with the error")
			}
			if !strings.HasPrefix(err.Error(), "building pod for node wf-abc.a: ") {
				t.Errorf("error %q does not say which node it was building", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildTemplateOffloadLimit(t *testing.T) {
	// withSourceSize returns a script input whose ARGO_TEMPLATE is exactly
	// size bytes; 'x' needs no JSON escaping so it adds one byte per byte.
	withSourceSize := func(t *testing.T, size int) Input {
		t.Helper()
		in := scriptInput()
		in.Template.Script.Source = ""
		base, err := executorTemplateJSON(in.Template)
		if err != nil {
			t.Fatalf("encoding base template: %v", err)
		}
		in.Template.Script.Source = strings.Repeat("x", size-len(base))
		return in
	}

	t.Run("a template exactly at the limit is passed inline", func(t *testing.T) {
		pod, err := Build(withSourceSize(t, TemplateOffloadLimit))
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if got := len(envValue(t, pod.Spec.InitContainers[0], common.EnvVarTemplate)); got != TemplateOffloadLimit {
			t.Errorf("ARGO_TEMPLATE is %d bytes, want %d", got, TemplateOffloadLimit)
		}
	})
	t.Run("a template one byte over the limit is rejected with its size because ConfigMap offloading is not supported yet", func(t *testing.T) {
		_, err := Build(withSourceSize(t, TemplateOffloadLimit+1))
		if err == nil {
			t.Fatal("Build succeeded, want an error")
		}
		for _, want := range []string{"131073 bytes", "ConfigMap", "not supported yet"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
	})
}

func TestBuildDeadlines(t *testing.T) {
	tests := []struct {
		name         string
		deadline     time.Duration // from testNow; 0 = no deadline
		templateSecs *intstr.IntOrString
		mainEnv      []corev1.EnvVar
		want         *int64
	}{
		{name: "no deadline gives no activeDeadlineSeconds", want: nil},
		{name: "a deadline gives the whole seconds remaining", deadline: 90*time.Second + 900*time.Millisecond, want: ptr.To[int64](90)},
		{name: "a deadline already passed still gives one second", deadline: -time.Minute, want: ptr.To[int64](1)},
		{name: "a shorter template activeDeadlineSeconds wins over the deadline", deadline: time.Hour, templateSecs: ptr.To(intstr.FromInt32(60)), want: ptr.To[int64](60)},
		{name: "a longer template activeDeadlineSeconds loses to the deadline", deadline: time.Minute, templateSecs: ptr.To(intstr.FromInt32(600)), want: ptr.To[int64](60)},
		{name: "a template activeDeadlineSeconds given as a string is parsed", templateSecs: ptr.To(intstr.FromString("45")), want: ptr.To[int64](45)},
		{
			name:     "a debug pause in main removes activeDeadlineSeconds",
			deadline: time.Minute, mainEnv: []corev1.EnvVar{{Name: "ARGO_DEBUG_PAUSE_AFTER", Value: "true"}}, want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := containerInput()
			if tt.deadline != 0 {
				in.Deadline = testNow.Add(tt.deadline)
			}
			in.Template.ActiveDeadlineSeconds = tt.templateSecs
			in.Template.Container.Env = append(in.Template.Container.Env, tt.mainEnv...)
			pod, err := Build(in)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := pod.Spec.ActiveDeadlineSeconds; !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("activeDeadlineSeconds = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func TestBuildArgoDeadlineEnv(t *testing.T) {
	t.Run("no deadline is passed to argoexec as the zero time", func(t *testing.T) {
		pod := mustBuild(t, containerInput())
		assertEnvEverywhere(t, pod, common.EnvVarDeadline, "0001-01-01T00:00:00Z")
	})
	t.Run("a deadline in another time zone is passed as UTC RFC 3339", func(t *testing.T) {
		in := containerInput()
		in.Deadline = time.Date(2026, 3, 1, 14, 30, 0, 0, time.FixedZone("CET", 3600))
		assertEnvEverywhere(t, mustBuild(t, in), common.EnvVarDeadline, "2026-03-01T13:30:00Z")
	})
}

func TestBuildTemplateEnv(t *testing.T) {
	in := artifactsInput()
	pod := mustBuild(t, in)

	t.Run("ARGO_TEMPLATE keeps input artifacts and drops input parameters", func(t *testing.T) {
		var got wfv1.Template
		if err := json.Unmarshal([]byte(envValue(t, pod.Spec.InitContainers[0], common.EnvVarTemplate)), &got); err != nil {
			t.Fatalf("ARGO_TEMPLATE is not a template: %v", err)
		}
		if len(got.Inputs.Parameters) != 0 {
			t.Errorf("ARGO_TEMPLATE has input parameters %v, want none", got.Inputs.Parameters)
		}
		if len(got.Inputs.Artifacts) != len(in.Template.Inputs.Artifacts) {
			t.Errorf("ARGO_TEMPLATE has %d input artifacts, want %d", len(got.Inputs.Artifacts), len(in.Template.Inputs.Artifacts))
		}
	})
	t.Run("every init container gets ARGO_TEMPLATE and no regular container does", func(t *testing.T) {
		for _, c := range pod.Spec.InitContainers {
			if !hasEnv(c, common.EnvVarTemplate) {
				t.Errorf("init container %s has no ARGO_TEMPLATE", c.Name)
			}
		}
		for _, c := range pod.Spec.Containers {
			if hasEnv(c, common.EnvVarTemplate) {
				t.Errorf("container %s has ARGO_TEMPLATE", c.Name)
			}
		}
	})
	t.Run("every container is told its own name", func(t *testing.T) {
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if got := envValue(t, c, common.EnvVarContainerName); got != c.Name {
				t.Errorf("container %s has ARGO_CONTAINER_NAME=%q", c.Name, got)
			}
		}
	})
	t.Run("every container mounts var-run-argo", func(t *testing.T) {
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if !hasMount(c, volumeVarRunArgo, common.VarRunArgoPath) {
				t.Errorf("container %s does not mount %s", c.Name, volumeVarRunArgo)
			}
		}
	})
	t.Run("every regular container except wait runs under the emissary", func(t *testing.T) {
		for _, c := range pod.Spec.Containers {
			wrapped := len(c.Command) > 0 && c.Command[0] == "/var/run/argo/argoexec"
			if wrapped != (c.Name != common.WaitContainerName) {
				t.Errorf("container %s command %v: wrapped=%v", c.Name, c.Command, wrapped)
			}
		}
	})
}

func TestBuildScheduling(t *testing.T) {
	t.Run("template scheduling fields override the workflow's", func(t *testing.T) {
		in := containerInput()
		in.Workflow.Spec.NodeSelector = map[string]string{"pool": "default"}
		in.Workflow.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
		in.Workflow.Spec.Tolerations = []corev1.Toleration{{Key: "wf"}}
		in.Workflow.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1)}
		in.Workflow.Spec.PodPriorityClassName = "wf-priority"
		in.Template.NodeSelector = map[string]string{"pool": "gpu"}
		in.Template.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}
		in.Template.Tolerations = []corev1.Toleration{{Key: "tmpl"}}
		in.Template.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](2)}
		in.Template.PriorityClassName = "tmpl-priority"
		in.Template.ServiceAccountName = "tmpl-sa"

		spec := mustBuild(t, in).Spec
		if spec.NodeSelector["pool"] != "gpu" || spec.Affinity.PodAffinity == nil || spec.Tolerations[0].Key != "tmpl" ||
			*spec.SecurityContext.RunAsUser != 2 || spec.PriorityClassName != "tmpl-priority" || spec.ServiceAccountName != "tmpl-sa" {
			t.Errorf("pod spec does not prefer the template: %+v", spec)
		}
	})
	t.Run("workflow scheduling fields apply when the template has none", func(t *testing.T) {
		in := containerInput()
		in.Workflow.Spec.NodeSelector = map[string]string{"pool": "default"}
		in.Workflow.Spec.Tolerations = []corev1.Toleration{{Key: "wf"}}
		spec := mustBuild(t, in).Spec
		if spec.NodeSelector["pool"] != "default" || spec.Tolerations[0].Key != "wf" || spec.ServiceAccountName != "workflow-sa" {
			t.Errorf("pod spec lost the workflow's settings: %+v", spec)
		}
	})
}

func TestBuildMetadata(t *testing.T) {
	t.Run("user labels and annotations cannot override the ones wfguard relies on", func(t *testing.T) {
		in := containerInput()
		in.Workflow.Spec.PodMetadata = &wfv1.Metadata{
			Labels:      map[string]string{common.LabelKeyWorkflow: "other", LabelWorkflowUID: "other"},
			Annotations: map[string]string{common.AnnotationKeyNodeID: "other"},
		}
		in.Template.Metadata.Labels = map[string]string{common.LabelKeyCompleted: "true"}
		pod := mustBuild(t, in)
		if pod.Labels[common.LabelKeyWorkflow] != "wf-abc" || pod.Labels[LabelWorkflowUID] != string(in.Workflow.UID) ||
			pod.Labels[common.LabelKeyCompleted] != "false" || pod.Annotations[common.AnnotationKeyNodeID] != in.NodeID {
			t.Errorf("system metadata was overridden: labels %v, annotations %v", pod.Labels, pod.Annotations)
		}
	})
	t.Run("template labels override workflow podMetadata labels", func(t *testing.T) {
		pod := mustBuild(t, fullInput())
		if got := pod.Labels["tier"]; got != "critical" {
			t.Errorf("label tier = %q, want the template's %q", got, "critical")
		}
	})
	t.Run("a pod without the status finalizer is not marked as managed", func(t *testing.T) {
		pod := mustBuild(t, containerInput())
		if len(pod.Finalizers) != 0 || pod.Annotations[AnnotationStatusFinalizerManaged] != "" {
			t.Errorf("finalizers %v, annotations %v", pod.Finalizers, pod.Annotations)
		}
	})
	t.Run("an empty executor image means the default argoexec image", func(t *testing.T) {
		pod := mustBuild(t, containerInput())
		if got := pod.Spec.InitContainers[0].Image; got != DefaultExecutorImage {
			t.Errorf("init image = %q, want %q", got, DefaultExecutorImage)
		}
	})
}

func TestBuildPodSpecPatch(t *testing.T) {
	t.Run("a patch can supply main's command, which is then wrapped by the emissary", func(t *testing.T) {
		in := containerInput()
		in.Template.Container.Command = nil
		in.Template.PodSpecPatch = `{"containers":[{"name":"main","command":["/bin/run"]}]}`
		main := mustBuild(t, in).Spec.Containers[1]
		if got := main.Command[len(main.Command)-2:]; got[0] != "--" || got[1] != "/bin/run" {
			t.Errorf("main command = %v, want it to end in -- /bin/run", main.Command)
		}
	})
	t.Run("the workflow patch applies before the template patch", func(t *testing.T) {
		in := containerInput()
		in.Workflow.Spec.PodSpecPatch = "terminationGracePeriodSeconds: 10"
		in.Template.PodSpecPatch = "terminationGracePeriodSeconds: 20"
		pod := mustBuild(t, in)
		if got := deref(pod.Spec.TerminationGracePeriodSeconds); got != "20" {
			t.Errorf("terminationGracePeriodSeconds = %s, want 20", got)
		}
		assertEnvInContainers(t, pod, common.EnvVarTerminationGracePeriodSeconds, "20")
	})
	t.Run("the workflow patch's {{workflow.*}} and {{pod.name}} are substituted before it is applied", func(t *testing.T) {
		in := containerInput()
		in.Globals = map[string]string{"workflow.parameters.mem": "100Mi", "workflow.parameters.note": `say "hi"`}
		in.Workflow.Spec.PodSpecPatch = "containers:\n- name: main\n  resources: {limits: {memory: \"{{workflow.parameters.mem}}\"}}\n" +
			"  env: [{name: POD, value: \"{{pod.name}}\"}, {name: NOTE, value: '{{workflow.parameters.note}}'}]\n"
		pod := mustBuild(t, in)
		main := pod.Spec.Containers[1]
		if got := main.Resources.Limits.Memory().String(); got != "100Mi" {
			t.Errorf("memory limit = %s, want 100Mi", got)
		}
		if got := envValue(t, main, "POD"); got != pod.Name {
			t.Errorf("POD = %q, want the pod's name %q", got, pod.Name)
		}
		if got := envValue(t, main, "NOTE"); got != `say "hi"` {
			t.Errorf("NOTE = %q, want the value with its quotes", got)
		}
	})
	t.Run("a patch still invalid after substitution is an error naming it", func(t *testing.T) {
		in := containerInput()
		in.Workflow.Spec.PodSpecPatch = `{"containers":[{"name":"main","resources":{"limits":{"cpu":"{{workflow.parameters.unset}}"}}}]}`
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "is not a pod spec") {
			t.Errorf("Build error = %v, want the patch named as not a pod spec", err)
		}
	})
}

func TestBuildIsPureAndDeterministic(t *testing.T) {
	for name, input := range map[string]func() Input{"container": containerInput, "script": scriptInput, "full": fullInput, "artifacts": artifactsInput} {
		t.Run("building the "+name+" input leaves it unchanged and gives the same pod twice", func(t *testing.T) {
			in := input()
			pristine := input()
			first := mustBuild(t, in)
			second := mustBuild(t, in)
			if !equality.Semantic.DeepEqual(in.Workflow, pristine.Workflow) || !equality.Semantic.DeepEqual(in.Template, pristine.Template) {
				t.Error("Build modified its input")
			}
			if !equality.Semantic.DeepEqual(first, second) {
				t.Error("two builds of the same input differ")
			}
			first.Spec.Containers[1].Env[0].Value = "changed"
			first.Spec.Volumes[2].Name = "changed"
			if !equality.Semantic.DeepEqual(in.Template, pristine.Template) || !equality.Semantic.DeepEqual(in.Workflow, pristine.Workflow) {
				t.Error("the pod shares memory with the input")
			}
		})
	}
}

func mustBuild(t *testing.T, in Input) *corev1.Pod {
	t.Helper()
	pod, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return pod
}

func envValue(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("container %s has no env var %s", c.Name, name)
	return ""
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func hasMount(c corev1.Container, name, mountPath string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == name && m.MountPath == mountPath {
			return true
		}
	}
	return false
}

func assertEnvEverywhere(t *testing.T, pod *corev1.Pod, name, want string) {
	t.Helper()
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if got := envValue(t, c, name); got != want {
			t.Errorf("container %s: %s = %q, want %q", c.Name, name, got, want)
		}
	}
}

// assertEnvInContainers checks regular containers only: argo does not give
// init containers the termination grace period.
func assertEnvInContainers(t *testing.T, pod *corev1.Pod, name, want string) {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if got := envValue(t, c, name); got != want {
			t.Errorf("container %s: %s = %q, want %q", c.Name, name, got, want)
		}
	}
}

func deref(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

func TestBuildWithoutNodeName(t *testing.T) {
	t.Run("an empty input is rejected with an error, not a panic", func(t *testing.T) {
		if _, err := Build(Input{}); err == nil || err.Error() != "building pod: workflow is nil" {
			t.Errorf("Build(Input{}) error = %v", err)
		}
	})
	t.Run("an empty node name is rejected", func(t *testing.T) {
		in := containerInput()
		in.NodeName = ""
		if _, err := Build(in); err == nil || err.Error() != "building pod: node name is empty" {
			t.Errorf("Build error = %v", err)
		}
	})
}

// TestBuildContainerSet pins what a containerSet pod takes from its template beyond the golden pod:
// which container kubectl picks, and where main's mounts go when the set has (or lacks) a main.
func TestBuildContainerSet(t *testing.T) {
	tests := []struct {
		name             string
		modify           func(tmpl *wfv1.Template)
		defaultContainer string
		waitMounts       []string // wait's mount paths, var-run-argo and tmp aside
		containers       []string
	}{
		{
			name:             "without a main container the last container is kubectl's default and wait mirrors nothing",
			modify:           func(*wfv1.Template) {},
			defaultContainer: "b",
			containers:       []string{"wait", "a", "b"},
		},
		{
			name:             "a container named main is kubectl's default and wait mirrors its mounts under /mainctrfs",
			modify:           func(tmpl *wfv1.Template) { tmpl.ContainerSet.Containers[1].Name = "main" },
			defaultContainer: "main",
			waitMounts:       []string{"/mainctrfs/workspace"},
			containers:       []string{"wait", "a", "main"},
		},
		{
			name: "sidecars that mirror main's mounts and input artifacts still build when the set has no main",
			modify: func(tmpl *wfv1.Template) {
				tmpl.Sidecars = []wfv1.UserContainer{{Container: corev1.Container{Name: "proxy", Image: "envoy", Command: []string{"envoy"}}, MirrorVolumeMounts: ptr.To(true)}}
				tmpl.Inputs.Artifacts = []wfv1.Artifact{{Name: "data", Path: "/data", ArtifactLocation: wfv1.ArtifactLocation{Raw: &wfv1.RawArtifact{Data: "x"}}}}
			},
			defaultContainer: "b",
			containers:       []string{"wait", "a", "b", "proxy"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := containerSetInput()
			tt.modify(in.Template)
			pod, err := Build(in)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := pod.Annotations[common.AnnotationKeyDefaultContainer]; got != tt.defaultContainer {
				t.Errorf("default container = %q, want %q", got, tt.defaultContainer)
			}
			var names []string
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.containers, ",") {
				t.Errorf("containers = %v, want %v", names, tt.containers)
			}
			var waitMounts []string
			for _, m := range findContainer(pod.Spec.Containers, common.WaitContainerName).VolumeMounts {
				if m.MountPath != "/tmp" && m.MountPath != common.VarRunArgoPath {
					waitMounts = append(waitMounts, m.MountPath)
				}
			}
			if strings.Join(waitMounts, ",") != strings.Join(tt.waitMounts, ",") {
				t.Errorf("wait mounts = %v, want %v", waitMounts, tt.waitMounts)
			}
		})
	}
}
