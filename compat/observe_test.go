package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pins podShape's keys and values, each line "key = value" in key order: metadata, the spec without
// containers and volumes, volumes and containers by name, env (ARGO_TEMPLATE expanded when it is JSON) and
// mounts.
func TestAPodsShapeNamesEveryFieldAControllerDecides(t *testing.T) {
	const uid = "0f3c2a9e-1111-2222-3333-444455556666"
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wf-a-1",
			Labels:          map[string]string{"workflows.argoproj.io/workflow": "wf", "owner": uid},
			Annotations:     map[string]string{"workflows.argoproj.io/node-name": "wf.a", "at": "2026-12-03T18:00:01Z"},
			Finalizers:      []string{"workflows.argoproj.io/status", "other"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", Controller: &yes}, {Kind: "ConfigMap", Name: "cm"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: "sa",
			Volumes: []corev1.Volume{{Name: "kube-api-access-7sm4w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "var-run-argo", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/" + uid}}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "argoexec", Args: []string{"init"}}},
			Containers: []corev1.Container{
				{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c"},
					Env: []corev1.EnvVar{
						{Name: "ARGO_TEMPLATE", Value: `{"name":"a","container":{"image":"busybox:1.36"},"inputs":{"parameters":[{"name":"p","value":"` + uid + `"}]}}`},
						{Name: "PLAIN", Value: "at 2026-12-03T18:00:01Z"},
						{Name: "FROM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "var-run-argo", MountPath: "/var/run/argo"}}},
				{Name: "wait", Image: "argoexec", Env: []corev1.EnvVar{{Name: "ARGO_TEMPLATE", Value: "not json"}}},
			},
		},
	}
	want := `annotations.at = <time>
annotations.workflows.argoproj.io/node-name = wf.a
containers.init:init.args.0 = init
containers.init:init.image = argoexec
containers.init:init.name = init
containers.main.command.0 = sh
containers.main.command.1 = -c
containers.main.env.ARGO_TEMPLATE.container.image = busybox:1.36
containers.main.env.ARGO_TEMPLATE.inputs.parameters.0.name = p
containers.main.env.ARGO_TEMPLATE.inputs.parameters.0.value = <uid>
containers.main.env.ARGO_TEMPLATE.name = a
containers.main.env.FROM = valueFrom {"fieldRef":{"fieldPath":"metadata.name"}}
containers.main.env.PLAIN = at <time>
containers.main.image = busybox:1.36
containers.main.mounts.var-run-argo:/var/run/argo = {"name":"var-run-argo","mountPath":"/var/run/argo"}
containers.main.name = main
containers.wait.env.ARGO_TEMPLATE = not json
containers.wait.image = argoexec
containers.wait.name = wait
finalizers = workflows.argoproj.io/status,other
labels.owner = <uid>
labels.workflows.argoproj.io/workflow = wf
ownerReferences.ConfigMap/cm = controller=false
ownerReferences.Workflow/wf = controller=true
spec.restartPolicy = Never
spec.serviceAccountName = sa
volumes.kube-api-access-<random>.name = kube-api-access-<random>
volumes.var-run-argo.hostPath.path = /run/<uid>
volumes.var-run-argo.name = var-run-argo
`
	shape := podShape(pod, uid)
	var lines []string
	for k, v := range shape {
		lines = append(lines, fmt.Sprintf("%s = %s", k, v))
	}
	slices.Sort(lines)
	if got := strings.Join(lines, "\n") + "\n"; got != want {
		t.Errorf("podShape:\n%s\nwant:\n%s", got, want)
	}
}

// The client status is compared by its shape: progress as written, resource names without their seconds,
// whether an estimate is set, and conditions by type and status in a stable order.
func TestTheClientStatusIsItsShapeNotItsSeconds(t *testing.T) {
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Progress: "1/2", EstimatedDuration: 12,
		ResourcesDuration: wfv1.ResourcesDuration{corev1.ResourceMemory: 31, corev1.ResourceCPU: 3},
		Conditions:        wfv1.Conditions{{Type: wfv1.ConditionTypePodRunning, Status: metav1.ConditionFalse}, {Type: wfv1.ConditionTypeCompleted, Status: metav1.ConditionTrue}},
		Nodes:             wfv1.Nodes{"id": {Name: "wf.a", Progress: "1/1", ResourcesDuration: wfv1.ResourcesDuration{corev1.ResourceCPU: 1}}}}}
	got := clientStatus(wf)
	want := map[string]string{"progress": "1/2", "resourcesDuration": "cpu,memory", "estimatedDuration": "true",
		"conditions": "Completed=True PodRunning=False", "progress of wf.a": "1/1", "resourcesDuration of wf.a": "cpu"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("client status\n got  %v\n want %v", got, want)
	}
}
