package compat

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wfguard/wfguard/sandbox/simnode"
)

func TestTheExecutorModelReadsEveryContainerOfAContainerSet(t *testing.T) {
	set := func(args ...string) *wfv1.Template {
		var containers []wfv1.ContainerNode
		for i, a := range args {
			containers = append(containers, wfv1.ContainerNode{Container: corev1.Container{
				Name: string(rune('a' + i)), Image: "alpine", Command: []string{"sh", "-c"}, Args: []string{a}}})
		}
		return &wfv1.Template{Name: "set", ContainerSet: &wfv1.ContainerSetTemplate{Containers: containers}}
	}
	for _, tc := range []struct {
		sentence string
		tmpl     *wfv1.Template
		exit     int32
	}{
		{"a containerSet whose containers hold no failing exit succeeds", set("echo a", "echo b"), 0},
		{"a literal failing exit in any container of a containerSet fails its pod", set("echo a", "exit 1"), 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			b := ExecutorModel().Func(simnode.PodInfo{Template: tc.tmpl})
			if b.ExitCode != tc.exit {
				t.Errorf("exit code %d, want %d", b.ExitCode, tc.exit)
			}
		})
	}
}
