package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

const runMainEnv = "WFGUARD_TEST_RUN_MAIN"

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	if args := os.Getenv(runMainEnv); args != "" {
		// Child mode: this test binary is the wfguard binary.
		os.Exit(run(strings.Fields(args), os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

func TestHelpAndBadFlagsAreClear(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"help lists the commands", []string{"help"}, 0, "wfguard controller [flags]"},
		{"no command shows usage", nil, 2, "Usage:"},
		{"demo names the playground binary it moved to", []string{"demo"}, 2, `"demo" is a command of the playground binary wfguard-sandbox`},
		{"up with its flags says how to run it", []string{"up", "--namespace=try"}, 2, "run 'make up', or 'go run ./cmd/wfguard-sandbox up'"},
		{"an unknown command is named", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"a bad log format is named", []string{"controller", "--log-format=xml"}, 2, `--log-format must be json or text, got "xml"`},
		{"zero workers are refused", []string{"controller", "--workflow-workers=0"}, 2, "--workflow-workers must be at least 1"},
		{"controller -h lists argo's flags", []string{"controller", "-h"}, 0, "-managed-namespace"},
		{"a zero pass deadline is refused", []string{"controller", "--pass-deadline=0"}, 2, "--pass-deadline must be positive, got 0s"},
		{"controller -h lists the pass deadline", []string{"controller", "-h"}, 0, "-pass-deadline"},
		{"controller -h lists the record key Secret", []string{"controller", "-h"}, 0, "-record-key-secret"},
		{"negative cron workers are refused", []string{"controller", "--cron-workflow-workers=-1"}, 2, "--cron-workflow-workers must not be negative, got -1"},
		{"controller -h lists the cron workers", []string{"controller", "-h"}, 0, "-cron-workflow-workers"},
		{"a content type the API server does not speak is named", []string{"controller", "--kube-api-content-type=application/yaml"}, 2,
			`--kube-api-content-type must be application/vnd.kubernetes.protobuf or application/json, got "application/yaml"`},
		{"controller -h lists the content type", []string{"controller", "-h"}, 0, "-kube-api-content-type"},
		{"controller -h says an invalid ConfigMap stops the start", []string{"controller", "-h"}, 0, "invalid at start stops the start"},
		{"controller -h lists the memoize trust", []string{"controller", "-h"}, 0, "-memoize-trust"},
		{"a memoize trust that is neither any nor sealed is named", []string{"controller", "--memoize-trust=trusted"}, 2,
			`--memoize-trust must be any or sealed, got "trusted"`},
		{"sealed memoization without the record key is refused", []string{"controller", "--memoize-trust=sealed", "--record-key-secret="}, 2,
			"--memoize-trust=sealed needs the record key: --record-key-secret must not be empty"},
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

func TestHelpListsNoPlaygroundCommand(t *testing.T) {
	var out bytes.Buffer
	run([]string{"help"}, &out, &out)
	for _, command := range []string{"wfguard demo", "wfguard up"} {
		if strings.Contains(out.String(), command) {
			t.Errorf("help lists %q, a command of wfguard-sandbox:\n%s", command, out.String())
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controllerProcess is `wfguard controller` running as a child process.
type controllerProcess struct {
	cmd         *exec.Cmd
	out         *bytes.Buffer
	healthPort  int
	metricsPort int
	done        chan error
}

func startController(t *testing.T, identity, namespace string, extra ...string) *controllerProcess {
	t.Helper()
	metrics, health := freePort(t), freePort(t)
	args := fmt.Sprintf("controller --kubeconfig=%s --namespaced --managed-namespace=%s --leader-election-namespace=%s "+
		"--metrics-port=%d --health-port=%d --log-format=json %s", cp.Kubeconfig, namespace, namespace, metrics, health, strings.Join(extra, " "))
	cmd := exec.Command(os.Args[0])
	// The controller's own namespace (its ConfigMap's) is the one it manages, as in a namespaced install.
	cmd.Env = append(os.Environ(), runMainEnv+"="+args, "LEADER_ELECTION_IDENTITY="+identity, "NAMESPACE="+namespace)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &controllerProcess{cmd: cmd, out: out, healthPort: health, metricsPort: metrics, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *controllerProcess) get(path string) (int, string) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.healthPort) + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never %s: %v", what, err)
	}
}

func TestTheBinaryLeadsServesAndDrainsOnSIGTERM(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "bin")
	if err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	first := startController(t, "first", ns)
	waitUntil(t, "the first controller became ready", 60*time.Second, func() bool { code, _ := first.get("/readyz"); return code == 200 })
	second := startController(t, "second", ns)
	waitUntil(t, "the second controller served /healthz", 60*time.Second, func() bool { code, _ := second.get("/healthz"); return code == 200 })
	if code, _ := second.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("the standby controller's /readyz = %d, want 503 while the other leads", code)
	}

	argo := versioned.NewForConfigOrDie(cp.Config())
	wf, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "via-binary"},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
			Container: containerSpec()}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the workflow succeeded", 60*time.Second, func() bool {
		got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == wfv1.WorkflowSucceeded
	})
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(first.metricsPort) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`wfguard_reconcile_total{result="success"}`, "wfguard_pods_created_total 1", "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// SIGTERM: the leader drains, releases the Lease and exits 0; the standby takes over.
	first.stopWithSIGTERM(t)
	for _, want := range []string{`"msg":"shutting down: draining workers"`, `"msg":"controller stopped"`} {
		if !strings.Contains(first.out.String(), want) {
			t.Errorf("the leader's log lacks %s", want)
		}
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	waitUntil(t, "the standby took over the Lease", 60*time.Second, func() bool {
		lease, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "workflow-controller", metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == "second"
	})
	waitUntil(t, "the new leader became ready", 60*time.Second, func() bool { code, _ := second.get("/readyz"); return code == 200 })
}

func containerSpec() *corev1.Container {
	return &corev1.Container{Image: "busybox", Command: []string{"true"}}
}

func TestTheActionCommandWaitsForTheOutcomeAndExitsWithItsCode(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "act")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "idle") // no controller watches it
	if err != nil {
		t.Fatal(err)
	}
	ctrl := startController(t, "cli", ns)
	waitUntil(t, "the controller became ready", 60*time.Second, func() bool { code, _ := ctrl.get("/readyz"); return code == 200 })
	argo := versioned.NewForConfigOrDie(cp.Config())
	if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "gate"},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
			Steps: []wfv1.ParallelSteps{{Steps: []wfv1.WorkflowStep{{Name: "approve", Template: "approve"}}}}},
			{Name: "approve", Suspend: &wfv1.SuspendTemplate{}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the workflow is suspended at approve", 60*time.Second, func() bool {
		wf, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), "gate", metav1.GetOptions{})
		return err == nil && len(wf.Status.Nodes) >= 3
	})
	kc := "--kubeconfig=" + cp.Kubeconfig
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"suspending a running workflow succeeds and prints its state", []string{"action", "suspend", "gate", "-n", ns, kc}, 0, "workflow " + ns + "/gate: phase Running"},
		{"suspending it again succeeds without changing anything", []string{"action", "suspend", "gate", "-n", ns, kc}, 0, "was already suspended; nothing changed"},
		{"resuming nodes no selector matches is an invalid argument", []string{"action", "resume", "gate", "-n", ns, kc, "--node-field-selector=displayName=nope"}, 3, "InvalidArgument: action gate-resume-"},
		{"a selector that does not parse is an invalid argument", []string{"action", "resume", "gate", "-n", ns, kc, "--node-field-selector=no-operator"}, 3, "InvalidNodeFieldSelector"},
		{"a missing workflow is not found", []string{"action", "terminate", "nope", "-n", ns, kc}, 5, "WorkflowNotFound"},
		{"an action pinned to another UID is not found and touches nothing", []string{"action", "terminate", "gate", "-n", ns, kc, "--uid=00000000-0000-0000-0000-000000000001"}, 5, "has UID"},
		{"resuming the node with an output succeeds", []string{"action", "resume", "gate", "-n", ns, kc, "--node-field-selector=displayName=approve", "--output-parameter=ok=yes"}, 0, "Applied"},
		{"no controller: the deadline names the action", []string{"action", "stop", "gate", "-n", idle, kc, "--timeout=1s"}, 6, "no controller has reported on it yet"},
		{"flags that do not apply are refused", []string{"action", "suspend", "gate", "--message=x"}, 2, "do not apply to suspend"},
		{"retrying a running workflow is a failed precondition", []string{"action", "retry", "gate", "-n", ns, kc, "-p", "x=1"}, 4, "WorkflowNotCompleted"},
		{"retry flags on another action are refused", []string{"action", "suspend", "gate", "--restart-successful"}, 2, "apply only to retry"},
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
	// The CLI labels each action with its requester, and the workflow's actor label names who resumed it last.
	actionClient, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	list, err := actionClient.Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	creators := map[string]bool{}
	for _, a := range list.Items {
		creators[a.Labels[common.LabelKeyCreator]] = true
	}
	wf, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), "gate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if actor := wf.Labels[common.LabelKeyActor]; len(creators) != 1 || creators[""] || !creators[actor] || wf.Labels[common.LabelKeyAction] != "Resume" {
		t.Errorf("creator labels on the actions %v, workflow labels %v: want one requester on every action, named by the workflow's actor label after its Resume", creators, wf.Labels)
	}
}

func TestTheBinaryRunsCorrectlyUnderInjectedFaults(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "faults")
	if err != nil {
		t.Fatal(err)
	}
	rules := t.TempDir() + "/rules"
	// Pod creates fail twice with a real 500, and result watch events arrive 30s late (the seed scenario).
	if err := os.WriteFile(rules, []byte("pods-500 api verb=create resource=pods : 2*error(500)->off for=10m\n"+
		"slow-results informer resource=workflowtaskresults : delay(30s) for=10m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns,
		Script: simnode.Script{Default: simnode.Behavior{Parameters: map[string]string{"out": "v1"}}}})
	proc := startController(t, "faulty", ns, "--fault-rules="+rules, "--fault-injection=enabled", "--fault-namespaces="+ns, "--fault-seed=7")
	argo := versioned.NewForConfigOrDie(cp.Config())
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "under-fire"}, Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{
		Name: "main", Container: containerSpec(),
		Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/out"}}}},
	}}}}
	if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), wf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var done *wfv1.Workflow
	waitUntil(t, "the workflow succeeded despite the faults", 60*time.Second, func() bool {
		got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
		done = got
		return err == nil && got.Status.Phase.Completed()
	})
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase = %s %q", done.Status.Phase, done.Status.Message)
	}
	n := done.Status.Nodes[done.NodeID(done.Name)]
	if n.Outputs == nil || len(n.Outputs.Parameters) != 1 || n.Outputs.Parameters[0].Value.String() != "v1" {
		t.Errorf("outputs = %v, want out=v1", n.Outputs)
	}
	for _, want := range []string{"FAULT INJECTION ENABLED", `"seed":7`, "injected fault: 500", `"msg":"FAULT RULE ACTIVE","rule":"slow-results"`} {
		if !strings.Contains(proc.out.String(), want) {
			t.Errorf("the controller log lacks %q", want)
		}
	}
	metrics := proc.metrics(t)
	for _, want := range []string{`wfguard_faultinject_injections_total{action="error",rule="pods-500",site="api"} 2`,
		`wfguard_faultinject_injections_total{action="delay",rule="slow-results",site="informer"}`, "wfguard_faultinject_active_rules 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// One Warning per rule and workflow, however often the rule fired on it.
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	waitUntil(t, "FaultInjected Events were recorded on the workflow", 30*time.Second, func() bool {
		evs, err := kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Workflow,involvedObject.name=under-fire,reason=FaultInjected"})
		if err != nil || len(evs.Items) != 2 {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Type != corev1.EventTypeWarning || ev.Count != 1 {
				return false
			}
		}
		return true
	})
}

func (p *controllerProcess) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.metricsPort) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// stopWithSIGTERM sends SIGTERM and fails the test unless the process exits 0 within 30 s.
func (p *controllerProcess) stopWithSIGTERM(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("the controller exited with %v after SIGTERM; output:\n%s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the controller did not exit within 30s of SIGTERM; output:\n%s", p.out.String())
	}
}

// metricsOrEmpty is /metrics, or "" while the process does not serve it yet.
func (p *controllerProcess) metricsOrEmpty() string {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.metricsPort) + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
