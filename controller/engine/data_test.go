package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

func TestADataTemplateRunsArgoexecDataAsMainAndAlwaysReportsItsResult(t *testing.T) {
	wf := artifactWorkflow(t, "", dataProducer)
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods, ConfigMaps: &fakeConfigMaps{objects: map[string]*corev1.ConfigMap{
		"ns/artifact-repositories": repoConfigMap("ns", "artifact-repositories", "r", map[string]string{"r": s3Repo})}}}
	runPass(t, e, wf, time.Now())
	pod := pods.created[wf.NodeID("arts[0].produce")]
	if pod == nil {
		t.Fatalf("no pod for the data step: %s %s", wf.Status.Message, describeNodes(wf))
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != common.MainContainerName {
		t.Fatalf("want main alone (argoexec reports the result itself), got %d containers", len(pod.Spec.Containers))
	}
	main := pod.Spec.Containers[0]
	if i := slices.Index(main.Command, "argoexec"); i < 0 || i+1 >= len(main.Command) || main.Command[i+1] != "data" {
		t.Errorf("main does not run argoexec data: %q", main.Command)
	}
	for _, env := range main.Env {
		if env.Name == common.EnvVarIncludeScriptOutput && env.Value != "true" {
			t.Errorf("the data step's result is not asked for although nothing reads it here: %s=%s", env.Name, env.Value)
		}
	}
}
