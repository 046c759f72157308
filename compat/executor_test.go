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

func TestADaemonServesUntilItsControllerStopsIt(t *testing.T) {
	daemon := true
	for _, tc := range []struct {
		sentence string
		tmpl     *wfv1.Template
		held     bool
	}{
		{"a daemon is held running, so no controller races its exit", &wfv1.Template{Name: "server", Daemon: &daemon, Container: &corev1.Container{Image: "nginx"}}, true},
		{"any other pod ends on its own", &wfv1.Template{Name: "job", Container: &corev1.Container{Image: "alpine"}}, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			b := ExecutorModel().Func(simnode.PodInfo{Template: tc.tmpl})
			if held := b.Hold != nil; held != tc.held {
				t.Errorf("held %v, want %v", held, tc.held)
			}
			if tc.held {
				select {
				case <-b.Hold:
					t.Error("the hold is released: the daemon would end on its own")
				default:
				}
			}
		})
	}
}
