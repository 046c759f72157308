package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wfguard/wfguard/internal/lockedbuffer"
	"github.com/wfguard/wfguard/test/harness"
)

const runMainEnv = "WFGUARD_SANDBOX_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if args := os.Getenv(runMainEnv); args != "" {
		// Child mode: this test binary is the wfguard-sandbox binary.
		os.Exit(run(strings.Fields(args), os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func TestHelpAndBadFlagsAreClear(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"help lists demo", []string{"help"}, 0, "wfguard-sandbox demo [flags]"},
		{"help lists up", []string{"help"}, 0, "wfguard-sandbox up [flags]"},
		{"no command shows usage", nil, 2, "Usage:"},
		{"an unknown command is named", []string{"controller"}, 2, `wfguard-sandbox: unknown command "controller"`},
		{"demo -h lists the examples directory", []string{"demo", "-h"}, 0, "-examples"},
		{"up -h lists where the kubeconfig goes", []string{"up", "-h"}, 0, "-kubeconfig-out"},
		{"a bad log format of demo is named", []string{"demo", "--log-format=xml"}, 2, `wfguard-sandbox demo: --log-format must be json or text, got "xml"`},
		{"a bad log level of up is named", []string{"up", "--log-level=loud"}, 2, "wfguard-sandbox up: --log-level"},
		{"an unknown flag of up is named", []string{"up", "--workflow-workers=2"}, 2, "flag provided but not defined: -workflow-workers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(tc.args, &out, &out); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; output:\n%s", code, tc.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out.String())
			}
		})
	}
}

func TestUpServesASandboxUntilInterruptedThenCleansUp(t *testing.T) {
	kubeconfig := t.TempDir() + "/kubeconfig"
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=up --kubeconfig-out="+kubeconfig+" --namespace=try --log-level=warn")
	out := &lockedbuffer.Buffer{} // written by the child's output copier while the test reads it
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	harness.Until(t, "the sandbox wrote its kubeconfig", 90*time.Second, func(context.Context) bool {
		_, err := os.Stat(kubeconfig)
		return err == nil && strings.Contains(out.String(), "Press Ctrl-C to stop")
	})
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = 50, 100 // the waits below poll faster than client-go's default 5/s
	workflows := harness.NewWorkflows(t, config, "try")
	workflows.Create(&wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "mine"},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
			Container: &corev1.Container{Image: "busybox", Command: []string{"true"}}}}},
	})
	if wf := workflows.WaitCompleted("mine"); wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("the user's workflow ended %s in the sandbox:\n%s", wf.Status.Phase, harness.Describe(wf))
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("wfguard-sandbox up exited with %v; output:\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("wfguard-sandbox up did not stop within 60s of SIGINT; output:\n%s", out.String())
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig was left behind (stat err %v)", err)
	}
}
