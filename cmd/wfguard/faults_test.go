package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func writeRules(t *testing.T, text string) string {
	t.Helper()
	path := t.TempDir() + "/rules"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFaultInjectionIsRefusedWithoutEveryGuard(t *testing.T) {
	kc := "--kubeconfig=" + cp.Kubeconfig
	on := []string{"controller", kc, "--fault-injection=enabled", "--fault-namespaces=a,b"}
	noExpiry := writeRules(t, "ok api verb=create resource=pods : error(500) max=3\nforever informer resource=pods : drop\n")
	crash := writeRules(t, "boom point name=after-workflow-persist : 1*crash->off max=1\n")
	garbled := writeRules(t, "# staging\nslow informer resource=pods : delay(2s) for=1m\nbad api : 3*error(500)->explode for=1m\n")
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"rules without enabling are refused", []string{"controller", "--fault-rules=/tmp/x"}, 2, "without --fault-injection=enabled"},
		{"enabling without rules is refused", []string{"controller", "--fault-injection=enabled", "--fault-namespaces=a"}, 2, "needs rules"},
		{"enabling without a namespace allow-list is refused", []string{"controller", "--fault-injection=enabled", "--fault-rules=/tmp/x"}, 2, "needs --fault-namespaces"},
		{"an empty namespace in the allow-list is refused", append(on, "--fault-namespaces=a,", "--fault-rules=/tmp/x"), 2, "has an empty name"},
		{"an unknown mode is refused", []string{"controller", "--fault-injection=maybe"}, 2, "must be enabled or disabled"},
		{"two sources are refused", append(on, "--fault-rules=/tmp/x", "--fault-rules-configmap=ns/cm"), 2, "exclusive"},
		{"a ConfigMap needs namespace/name", append(on, "--fault-rules-configmap=cm"), 2, "NAMESPACE/NAME"},
		{"a crash allow without enabling is refused", []string{"controller", "--allow-fault-crash"}, 2, "need --fault-injection=enabled"},
		{"a rule without expiry is refused at its line", append(on, "--fault-rules="+noExpiry), 1, "line 2 col 38: rule forever never expires"},
		{"the deprecated allow flag still enables (and still checks expiry)",
			[]string{"controller", kc, "--allow-fault-injection", "--fault-namespaces=a", "--fault-rules=" + noExpiry}, 1, "line 2 col 38"},
		{"a crash rule is refused without --allow-fault-crash", append(on, "--fault-rules="+crash), 1, "line 1 col 42: rule boom crashes the process"},
		{"a rule that does not parse is refused at its position", append(on, "--fault-rules="+garbled), 1, `line 3 col 25: term \"explode\": unknown action`},
		{"a missing ConfigMap is refused", append(on, "--fault-rules-configmap=default/none"), 1, "ConfigMap default/none does not exist"},
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

func submitSimple(t *testing.T, ns, name string) {
	t.Helper()
	argo := versioned.NewForConfigOrDie(cp.Config())
	if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: containerSpec()}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func phaseOf(t *testing.T, ns, name string) wfv1.WorkflowPhase {
	wf, err := versioned.NewForConfigOrDie(cp.Config()).ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return wf.Status.Phase
}

// The staging recipe "pause the workers" from a watched ConfigMap: nothing moves while the rule holds, and
// deleting the ConfigMap releases the workers at once.
func TestDeletingTheRulesConfigMapStopsInjection(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "cmfaults")
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chaos"},
		Data: map[string]string{"rules": "hold-workers point name=worker : pause for=10m\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	proc := startController(t, "paused", ns, "--fault-injection=enabled", "--fault-namespaces="+ns, "--fault-rules-configmap="+ns+"/chaos")
	waitUntil(t, "the controller became ready", 60*time.Second, func() bool { code, _ := proc.get("/readyz"); return code == 200 })
	submitSimple(t, ns, "held")
	waitUntil(t, "every worker is held at the gate", 30*time.Second, func() bool {
		return strings.Contains(proc.metrics(t), `wfguard_faultinject_injections_total{action="pause",rule="hold-workers",site="point"}`)
	})
	if phase := phaseOf(t, ns, "held"); phase != "" {
		t.Fatalf("the workflow moved to %q while the workers were paused", phase)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), "chaos", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the workflow succeeded once the rules were deleted", 60*time.Second, func() bool { return phaseOf(t, ns, "held") == wfv1.WorkflowSucceeded })
	for _, want := range []string{`"msg":"FAULT RULE ACTIVE","rule":"hold-workers"`, "FAULT INJECTION STOPPED: the rules ConfigMap was deleted"} {
		if !strings.Contains(proc.out.String(), want) {
			t.Errorf("the controller log lacks %s", want)
		}
	}
	if m := proc.metrics(t); !strings.Contains(m, "wfguard_faultinject_active_rules 0") {
		t.Errorf("active rules after the deletion:\n%s", grepLines(m, "wfguard_faultinject"))
	}
}

// The staging recipe "crash after persist": with --allow-fault-crash the process exits with its own code
// right after the first workflow write, and a restarted controller finishes the workflow.
func TestACrashRuleExitsTheProcessWithItsOwnCode(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	rules := writeRules(t, "boom point name=after-workflow-persist : 1*crash->off max=1\n")
	proc := startController(t, "crashing", ns, "--fault-injection=enabled", "--fault-namespaces="+ns, "--fault-rules="+rules, "--allow-fault-crash")
	submitSimple(t, ns, "survivor")
	var exitErr *exec.ExitError
	select {
	case err := <-proc.done:
		proc.done <- err
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitFaultCrash {
			t.Fatalf("the controller exited with %v, want exit code %d; output:\n%s", err, exitFaultCrash, proc.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the controller did not crash; output:\n%s", proc.out.String())
	}
	if !strings.Contains(proc.out.String(), `"msg":"FAULT INJECTION: CRASHING THE PROCESS ON PURPOSE","rule":"boom"`) {
		t.Errorf("no loud line before the crash; output:\n%s", proc.out.String())
	}
	// The crashed leader never released its Lease: the next controller runs without election and resumes from the store.
	startController(t, "after-crash", ns, "--leader-elect=false")
	waitUntil(t, "a restarted controller finished the workflow", 60*time.Second, func() bool { return phaseOf(t, ns, "survivor") == wfv1.WorkflowSucceeded })
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
