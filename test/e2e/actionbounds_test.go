package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/test/harness"
)

func TestTheCRDBoundsEveryActionField(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := strings.Repeat("x", 1<<20)
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("p%d", i)] = "v"
	}
	for _, tc := range []struct {
		sentence string
		spec     v1alpha1.WorkflowActionSpec
		want     string
	}{
		{"a workflow name with a slash", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("a/b"), Action: "Stop"}, "spec.workflowRef.name"},
		{"a workflow name in capitals", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("Approval"), Action: "Stop"}, "spec.workflowRef.name"},
		{"a workflow name over 253 bytes", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(strings.Repeat("a", 254)), Action: "Stop"}, "spec.workflowRef.name"},
		{"a 1 MiB resume selector", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Resume",
			Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: big}}, "spec.resume.nodeFieldSelector"},
		{"a 1 MiB stop selector", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Stop",
			Stop: &v1alpha1.StopParameters{NodeFieldSelector: big}}, "spec.stop.nodeFieldSelector"},
		{"a 2 KiB stop message", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Stop",
			Stop: &v1alpha1.StopParameters{Message: strings.Repeat("m", 2048)}}, "spec.stop.message"},
		{"a 1 MiB output parameter", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Resume",
			Resume: &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": big}}}, "outputParameters names are at most 253 bytes and values at most 32768"},
		{"65 output parameters", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: "Resume",
			Resume: &v1alpha1.ResumeParameters{OutputParameters: many}}, "spec.resume.outputParameters"},
		{"a 1 KiB action", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("x"), Action: strings.Repeat("A", 1024)}, "spec.action"},
	} {
		_, err := e.actionClient().Create(t.Context(), &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: tc.spec}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 8192 {
			msg := fmt.Sprint(err)
			t.Errorf("%s: err = %.300s, want it refused naming %q", tc.sentence, msg, tc.want)
		}
	}
}

// Actions stored before the CRD had its bounds (or under an older CRD) still each get one bounded outcome,
// and none holds up the actions behind it.
func TestActionsStoredBeforeTheBoundsEndAndDoNotBlockTheQueue(t *testing.T) {
	e := newEnv(t, envOptions{})
	relaxActionCRD(t)
	wf := e.Submit(fmt.Sprintf(approval, "queued"))
	e.WaitFor(wf.Name, "suspended at approve", 30*time.Second, func(wf *wfv1.Workflow) bool {
		n := harness.NodeByName(wf, "queued[0].approve")
		return n != nil && n.Phase == wfv1.NodeRunning
	})
	// Not a selector at all: its parse error quotes it, which once made a 3 MiB record and outcome.
	huge := e.createRelaxed("a-huge-selector", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
		Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: strings.Repeat("x", 1<<20)}})
	resume := e.create("b-resume", v1alpha1.WorkflowActionSpec{WorkflowRef: ref(wf.Name), Action: v1alpha1.ActionResume,
		Resume: &v1alpha1.ResumeParameters{OutputParameters: map[string]string{"answer": "yes"}}})
	slash := e.createRelaxed("c-slash", v1alpha1.WorkflowActionSpec{WorkflowRef: ref("a/b"), Action: v1alpha1.ActionStop})

	for _, tc := range []struct {
		sentence string
		name     string
		phase    v1alpha1.ActionPhase
		reason   string
	}{
		{"the 1 MiB selector fails with a bounded message", huge.Name, v1alpha1.PhaseFailed, actions.ReasonInvalidNodeFieldSelector},
		{"the Resume queued behind it is applied", resume.Name, v1alpha1.PhaseSucceeded, actions.ReasonApplied},
		{"a workflowRef.name no workflow can have fails as not found", slash.Name, v1alpha1.PhaseFailed, actions.ReasonWorkflowNotFound},
	} {
		got := e.waitAction(tc.name)
		expectOutcome(t, got, tc.phase, tc.reason)
		if len(got.Status.Message) > actions.MaxMessageLength+64 {
			t.Errorf("%s: the outcome message is %d bytes, want at most about %d", tc.sentence, len(got.Status.Message), actions.MaxMessageLength)
		}
	}
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("workflow = %s %q, want Succeeded after the Resume\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	if n := harness.NodeByName(done, "queued[1].after"); n == nil || n.Inputs == nil || len(n.Inputs.Parameters) == 0 || n.Inputs.Parameters[0].Value.String() != "yes" {
		t.Errorf("the step after the approval did not get the Resume's answer: %+v", n)
	}
}

// createRelaxed creates an action the bounded CRD would refuse, retrying only until the relaxed schema is served.
func (e *env) createRelaxed(name string, spec v1alpha1.WorkflowActionSpec) *v1alpha1.WorkflowAction {
	e.t.Helper()
	var a *v1alpha1.WorkflowAction
	var last error
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		a, last = e.actionClient().Create(ctx, &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		e.t.Fatalf("creating action %s under the relaxed CRD: %.300v", name, last)
	}
	return a
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// relaxActionCRD drops the WorkflowAction CRD's bounds on workflowRef.name and the resume selector, as an
// older CRD had, and restores the CRD when the test ends.
func relaxActionCRD(t *testing.T) {
	t.Helper()
	client := dynamic.NewForConfigOrDie(cp.Config()).Resource(crdResource)
	name := v1alpha1.Resource + "." + v1alpha1.SchemeGroupVersion.Group
	orig, err := client.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	relaxed := orig.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(relaxed.Object, "spec", "versions")
	for i := range versions {
		v := versions[i].(map[string]any)
		spec := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties"}
		unstructured.RemoveNestedField(v, append(spec, "workflowRef", "properties", "name", "pattern")...)
		unstructured.RemoveNestedField(v, append(spec, "resume", "properties", "nodeFieldSelector", "maxLength")...)
		versions[i] = v
	}
	if err := unstructured.SetNestedSlice(relaxed.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Update(t.Context(), relaxed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("relaxing the WorkflowAction CRD: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		latest, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("restoring the WorkflowAction CRD: %v", err)
			return
		}
		spec, _, _ := unstructured.NestedFieldCopy(orig.Object, "spec")
		_ = unstructured.SetNestedField(latest.Object, spec, "spec")
		if _, err := client.Update(ctx, latest, metav1.UpdateOptions{}); err != nil {
			t.Errorf("restoring the WorkflowAction CRD: %v", err)
		}
		// Wait until the bounds are served again, so later tests see the real CRD.
		probe := &v1alpha1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
			Spec: v1alpha1.WorkflowActionSpec{WorkflowRef: ref("a/b"), Action: "Stop"}}
		c, _ := v1alpha1.NewForConfig(cp.Config())
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			created, err := c.Namespace("default").Create(ctx, probe, metav1.CreateOptions{})
			if err == nil {
				_ = c.Namespace("default").Delete(ctx, created.Name, metav1.DeleteOptions{})
			}
			return err != nil, nil
		})
	})
}
