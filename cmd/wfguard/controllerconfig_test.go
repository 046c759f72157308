package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// The binary never starts with fewer fences than its controller ConfigMap sets: with instanceID a, a
// workflow labelled for no instance is another controller's, and must never be touched. An invalid
// ConfigMap has no last valid config to fall back on at start, so the process exits (as argo's does)
// before it reconciles anything; a ConfigMap whose first reads fail is read again, not taken for absent.
func TestTheBinaryStartsOnlyWithTheControllerConfigMapItCouldRead(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		data     map[string]string
		// faults are fault rules for the run (the controller's namespace is faulted).
		faults string
		// wantCode 1: the process exits at start; 0: it runs instance a's workflow, then exits on SIGTERM.
		wantCode int
		wantOut  []string
	}{
		{sentence: "an invalid ConfigMap stops the start before anything is reconciled, naming itself and the parse error",
			data:     map[string]string{"instanceID": "a", "workflowDefaults": "metadata: [unclosed\nspec: {}\n"},
			wantCode: 1, wantOut: []string{"/" + controllerconfig.DefaultName + " is invalid, so the controller does not start", "yaml: "}},
		{sentence: "a ConfigMap whose first reads fail is read again, and its instanceID fences the workflows",
			data:    map[string]string{"instanceID": "a"},
			faults:  "configmap-500 api resource=configmaps : 2*error(500)->off for=10m\n",
			wantOut: []string{"cannot read the controller ConfigMap; retrying, and not starting until it is read"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "cfgstart")
			if err != nil {
				t.Fatal(err)
			}
			kube := kubernetes.NewForConfigOrDie(cp.Config())
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: controllerconfig.DefaultName}, Data: tc.data}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			argo := versioned.NewForConfigOrDie(cp.Config()).ArgoprojV1alpha1().Workflows(ns)
			oneStep := func(name string, labels map[string]string) *wfv1.Workflow {
				wf, err := argo.Create(t.Context(), &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
					Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: containerSpec()}}},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return wf
			}
			foreign := oneStep("no-instance", nil)
			var extra []string
			if tc.faults != "" {
				rules := t.TempDir() + "/rules"
				if err := os.WriteFile(rules, []byte(tc.faults), 0o644); err != nil {
					t.Fatal(err)
				}
				extra = append(extra, "--fault-rules="+rules, "--fault-injection=enabled", "--fault-namespaces="+ns)
			}
			proc := startController(t, "cfgstart", ns, extra...)

			if tc.wantCode == 0 {
				harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
				mine := oneStep("instance-a", map[string]string{common.LabelKeyControllerInstanceID: "a"})
				waitUntil(t, "instance a's workflow succeeded", 60*time.Second, func() bool {
					got, err := argo.Get(t.Context(), mine.Name, metav1.GetOptions{})
					return err == nil && got.Status.Phase == wfv1.WorkflowSucceeded
				})
				if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil { // its output is read once it exited
					t.Fatal(err)
				}
			}
			select {
			case err := <-proc.done:
				proc.done <- err
				if code := proc.cmd.ProcessState.ExitCode(); code != tc.wantCode {
					t.Errorf("the controller exited with %v, want exit code %d", err, tc.wantCode)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("the controller still runs 60s after start (or SIGTERM), want it to exit with code %d", tc.wantCode)
			}
			// Checked once the process exited, having run (or not) a workflow created after this one.
			got, err := argo.Get(t.Context(), foreign.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != foreign.ResourceVersion || got.Status.Phase != "" {
				t.Errorf("the workflow labelled for no instance was written (phase %q, labels %v), want it untouched", got.Status.Phase, got.Labels)
			}
			out := proc.out.String()
			for _, want := range append(tc.wantOut, ns+"/"+controllerconfig.DefaultName) {
				if !strings.Contains(out, want) {
					t.Errorf("the controller's output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
