package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) {
	if os.Getenv(panicChildEnv) != "" {
		// Child mode for TestPanickingTestLeavesNothingBehind: start, report, then die mid-test.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, opts Options) *ControlPlane {
	t.Helper()
	opts.Logf = t.Logf
	cp, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return cp
}

func TestControlPlaneServesArgoCRDsAndStopsWithoutLeftovers(t *testing.T) {
	opts := Options{Logf: t.Logf}
	cp, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	pids, dir := cp.Pids(), cp.Dir()
	if len(pids) != 2 {
		t.Errorf("want etcd and kube-apiserver running, got pids %v", pids)
	}
	ns, err := CreateNamespace(t.Context(), cp.Config(), "cp")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config())
	for _, resource := range []string{"workflows", "workflowtemplates", "workflowtaskresults"} {
		gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: resource}
		if _, err := dyn.Resource(gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("listing %s after start: %v", resource, err)
		}
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	version, err := kube.Discovery().ServerVersion()
	if err != nil || version.GitVersion != "v1.37.2" {
		t.Errorf("server version = %v (err %v), want v1.37.2", version, err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace %s has no default ServiceAccount: %v", ns, err)
	}

	if err := cp.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s still exists after Stop (stat err %v)", dir, err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("a second Stop should be a no-op, got %v", err)
	}
}

// fakeBinDir holds the real etcd next to a fake kube-apiserver script, both stamped as current.
func fakeBinDir(t *testing.T, apiserverScript string) (root, binDir string) {
	t.Helper()
	wd, _ := os.Getwd()
	root, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := expectedStamp(root)
	if err != nil {
		t.Fatal(err)
	}
	binDir = t.TempDir()
	if err := os.Symlink(filepath.Join(root, "bin", EtcdBinary), filepath.Join(binDir, EtcdBinary)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, KubeAPIServerBinary), []byte("#!/bin/sh\n"+apiserverScript+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{EtcdBinary, KubeAPIServerBinary} {
		if err := os.WriteFile(filepath.Join(binDir, b+".stamp"), []byte(stamp+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, binDir
}

func TestBadSetupGivesAClearErrorWithinBoundedTime(t *testing.T) {
	cases := []struct {
		name    string
		opts    func(t *testing.T) Options
		wantErr []string
	}{
		{
			name:    "a missing binary names make tools",
			opts:    func(t *testing.T) Options { return Options{BinDir: t.TempDir()} },
			wantErr: []string{"etcd is missing", "make tools"},
		},
		{
			name: "a binary built from another tools module is stale",
			opts: func(t *testing.T) Options {
				dir := t.TempDir()
				for _, f := range []string{EtcdBinary, EtcdBinary + ".stamp"} {
					if err := os.WriteFile(filepath.Join(dir, f), []byte("0000000000000000\n"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				return Options{BinDir: dir}
			},
			wantErr: []string{"is stale", "make tools"},
		},
		{
			name: "an apiserver that never becomes ready times out",
			opts: func(t *testing.T) Options {
				_, bin := fakeBinDir(t, "exec sleep 600")
				return Options{BinDir: bin, ReadyTimeout: 2 * time.Second}
			},
			wantErr: []string{"kube-apiserver not ready after 2s"},
		},
		{
			name: "an apiserver that exits shows its log",
			opts: func(t *testing.T) Options {
				_, bin := fakeBinDir(t, "echo 'invalid flag --foo' >&2; exit 3")
				return Options{BinDir: bin}
			},
			wantErr: []string{"kube-apiserver exited early", "invalid flag --foo"},
		},
		{
			name: "a port that cannot be bound is named after retries",
			opts: func(t *testing.T) Options {
				_, bin := fakeBinDir(t, "echo 'listen tcp 127.0.0.1:1234: bind: address already in use' >&2; exit 1")
				return Options{BinDir: bin}
			},
			wantErr: []string{"could not bind its port", "address already in use"},
		},
		{
			name: "a CRD that fails to install names the file",
			opts: func(t *testing.T) Options {
				dir := t.TempDir()
				bad := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: broken.example.com\nspec:\n  group: example.com\n"
				if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(bad), 0o644); err != nil {
					t.Fatal(err)
				}
				return Options{CRDDir: dir}
			},
			wantErr: []string{"installing CRD broken.example.com from", "broken.yaml"},
		},
		{
			name: "a CRD file that is not YAML names the file",
			opts: func(t *testing.T) Options {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "garbage.yaml"), []byte("{{{ not yaml"), 0o644); err != nil {
					t.Fatal(err)
				}
				return Options{CRDDir: dir}
			},
			wantErr: []string{"parsing CRD file", "garbage.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts(t)
			opts.Logf = t.Logf
			before := childPids(t)
			cp, err := Start(t.Context(), opts)
			if err == nil {
				cp.Stop()
				t.Fatalf("Start succeeded, want an error containing %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if after := childPids(t); len(after) > len(before) {
				t.Errorf("a failed Start left child processes: before %v, after %v", before, after)
			}
		})
	}
}

// childPids lists the live child processes of this test binary, from /proc.
func childPids(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the process exited while we looked
		}
		// Fields after the parenthesised command: state, ppid, ...
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == os.Getpid() {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}

const panicChildEnv = "WFGUARD_CONTROLPLANE_PANIC_CHILD"

// TestPanicChild is only run as a child process by TestPanickingTestLeavesNothingBehind.
func TestPanicChild(t *testing.T) {
	if os.Getenv(panicChildEnv) == "" {
		return // runs as a helper process only; nothing to check in the parent
	}
	cp, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Printf("START-ERROR %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("PIDS %v DIR %s\n", strings.Trim(fmt.Sprint(cp.Pids()), "[]"), cp.Dir())
	panic("a test panicked with the control plane running")
}

func TestPanickingTestLeavesNothingBehind(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPanicChild$", "-test.v")
	cmd.Env = append(os.Environ(), panicChildEnv+"=1")
	out, _ := cmd.CombinedOutput()
	var pids []int
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "PIDS "); ok {
			fields := strings.Fields(rest)
			for i, f := range fields {
				if f == "DIR" {
					dir = fields[i+1]
					break
				}
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) != 2 || dir == "" {
		t.Fatalf("child did not report its control plane; output:\n%s", out)
	}
	if !strings.Contains(string(out), "a test panicked") {
		t.Fatalf("child did not panic; output:\n%s", out)
	}
	// The kernel delivers SIGKILL on the parent's death; reaping by init is asynchronous.
	for _, pid := range pids {
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return processGone(pid), nil })
		if err != nil {
			t.Errorf("control-plane process %d outlived its panicking test binary", pid)
		}
	}
	// The next control plane removes the dead binary's temp dir.
	start(t, Options{})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s of the panicked binary was not swept (stat err %v)", dir, err)
	}
}

func TestControllerManagerGarbageCollectsAWorkflowsPods(t *testing.T) {
	cp := start(t, Options{ControllerManager: true})
	if len(cp.Pids()) != 3 {
		t.Fatalf("want etcd, kube-apiserver and kube-controller-manager, got %v", cp.Pids())
	}
	ns, err := CreateNamespace(t.Context(), cp.Config(), "gc")
	if err != nil {
		t.Fatal(err)
	}
	argo := versioned.NewForConfigOrDie(cp.Config())
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	wf, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Spec:       wfv1.WorkflowSpec{Entrypoint: "main"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "owner-main", OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(wf, wfv1.SchemeGroupVersion.WithKind("Workflow"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := argo.ArgoprojV1alpha1().Workflows(ns).Delete(t.Context(), wf.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the garbage collector did not delete the deleted workflow's pod: %v", err)
	}
}
