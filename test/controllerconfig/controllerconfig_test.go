package controllerconfig_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/podfinalizer"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

const timeout = time.Minute

// env is a controller reading its ConfigMap from its own namespace, running workflows in another.
type env struct {
	*harness.Workflows // the workflows' namespace
	t                  *testing.T
	ctlNS              string // the controller's namespace, holding the ConfigMap
	watcher            *controllerconfig.Watcher
	env                *harness.Env
}

func start(t *testing.T, configDoc string, script simnode.Script) *env {
	t.Helper()
	e := &env{t: t, Workflows: harness.NewWorkflows(t, cp.Config(), harness.Namespace(t, cp.Config(), "cfg")),
		ctlNS: harness.Namespace(t, cp.Config(), "cfgctl")}
	e.writeConfig(configDoc, true)
	w, err := controllerconfig.NewWatcher(controllerconfig.Options{Kube: e.Kube, Namespace: e.ctlNS, Log: harness.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done }) // registered first: runs after the controller stopped
	if err := w.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.watcher = w
	e.env = harness.Start(t, cp.Config(), controller.Options{Namespace: e.Namespace, Workers: 4, Config: w,
		Validate: controller.ArgoValidator(e.Argo), Logger: harness.Logger(t)},
		simnode.Options{Namespace: e.Namespace, Script: script})
	return e
}

func (e *env) writeConfig(doc string, create bool) {
	e.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ctlNS, Name: controllerconfig.DefaultName},
		Data: map[string]string{controllerconfig.ConfigKey: doc}}
	var err error
	if create {
		_, err = e.Kube.CoreV1().ConfigMaps(e.ctlNS).Create(e.t.Context(), cm, metav1.CreateOptions{})
	} else {
		_, err = e.Kube.CoreV1().ConfigMaps(e.ctlNS).Update(e.t.Context(), cm, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitFor(what string, cond func(ctx context.Context) (bool, error)) {
	e.t.Helper()
	if err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, timeout, true, cond); err != nil {
		e.t.Fatalf("never %s: %v", what, err)
	}
}

func (e *env) workflow(name string) *wfv1.Workflow {
	e.t.Helper()
	wf, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return wf
}

func (e *env) waitPhase(name string, phase wfv1.WorkflowPhase) *wfv1.Workflow {
	e.t.Helper()
	return e.WaitFor(name, string(phase), timeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase == phase })
}

func (e *env) pods(workflow string) []corev1.Pod {
	e.t.Helper()
	list, err := e.Kube.CoreV1().Pods(e.Namespace).List(e.t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + workflow})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

const twoSteps = `
metadata: {generateName: two-steps-}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - [{name: a, template: work}]
    - [{name: b, template: work}]
  - {name: work, container: {image: alpine, command: ["true"]}}
`

func configWithPool(pool string) string {
	return `
workflowDefaults:
  spec:
    tolerations: [{key: pool, operator: Equal, value: ` + pool + `, effect: NoSchedule}]
    podMetadata: {labels: {pool: ` + pool + `}}
executor:
  resources: {requests: {cpu: 15m, memory: 40Mi}}
`
}

// checkPods asserts every pod of the workflow carries the default toleration and pod label of pool and
// the executor resources on its init and wait containers.
func (e *env) checkPods(workflow, pool string) {
	e.t.Helper()
	pods := e.pods(workflow)
	if len(pods) != 2 {
		e.t.Fatalf("workflow %s has %d pods, want 2", workflow, len(pods))
	}
	for _, pod := range pods {
		// The API server's DefaultTolerationSeconds admission adds its own tolerations beside ours.
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "pool" && t.Value == pool }) {
			e.t.Errorf("pod %s tolerations = %v, want the pool=%s default", pod.Name, pod.Spec.Tolerations, pool)
		}
		if pod.Labels["pool"] != pool {
			e.t.Errorf("pod %s label pool = %q, want %q", pod.Name, pod.Labels["pool"], pool)
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if c.Name != common.InitContainerName && c.Name != common.WaitContainerName {
				continue
			}
			if c.Resources.Requests.Cpu().String() != "15m" || c.Resources.Requests.Memory().String() != "40Mi" {
				e.t.Errorf("pod %s container %s requests %v, want the executor's 15m / 40Mi", pod.Name, c.Name, c.Resources.Requests)
			}
		}
	}
}

// TestConfigMapShapesEveryWorkflowPodAndFollowsEdits: the ConfigMap's workflowDefaults and executor reach
// every pod; an edit reaches the next workflow without a restart; an invalid edit keeps the last valid
// config and emits a ConfigMapInvalid Warning on the ConfigMap.
func TestConfigMapShapesEveryWorkflowPodAndFollowsEdits(t *testing.T) {
	e := start(t, configWithPool("batch"), simnode.Script{})

	first := e.Submit(twoSteps).Name
	e.waitPhase(first, wfv1.WorkflowSucceeded)
	e.checkPods(first, "batch")

	e.writeConfig(configWithPool("gpu"), false)
	e.waitFor("took the edit", func(context.Context) (bool, error) {
		return poolOf(e.watcher.Current()) == "gpu", nil
	})
	second := e.Submit(twoSteps).Name
	e.waitPhase(second, wfv1.WorkflowSucceeded)
	e.checkPods(second, "gpu")

	e.writeConfig("workflowDefaults: [not, a, workflow]\n", false)
	e.waitFor("emitted ConfigMapInvalid", func(ctx context.Context) (bool, error) {
		events, err := e.Kube.CoreV1().Events(e.ctlNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.Reason == controllerconfig.ReasonConfigMapInvalid && ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.Name == controllerconfig.DefaultName {
				return true, nil
			}
		}
		return false, nil
	})
	third := e.Submit(twoSteps).Name
	e.waitPhase(third, wfv1.WorkflowSucceeded)
	e.checkPods(third, "gpu") // the last valid config
}

func poolOf(c *config.Config) string {
	if c.WorkflowDefaults == nil || len(c.WorkflowDefaults.Spec.Tolerations) == 0 {
		return ""
	}
	return c.WorkflowDefaults.Spec.Tolerations[0].Value
}

// TestNamespaceParallelismHoldsTheNextWorkflowPending: with namespaceParallelism 1, a second workflow
// stays Pending with argo's message, and no pod, until the first ends; then it runs.
func TestNamespaceParallelismHoldsTheNextWorkflowPending(t *testing.T) {
	gate := make(chan struct{})
	e := start(t, "namespaceParallelism: 1\n", simnode.Script{ByTemplate: map[string]simnode.Behavior{"held": {Hold: gate}}})

	first := e.Submit(`
metadata: {generateName: first-}
spec: {entrypoint: held, templates: [{name: held, container: {image: alpine, command: ["true"]}}]}
`).Name
	e.waitFor("started the first workflow's pod", func(context.Context) (bool, error) { return len(e.pods(first)) == 1, nil })
	second := e.Submit(`
metadata: {generateName: second-}
spec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: ["true"]}}]}
`).Name
	wf := e.waitPhase(second, wfv1.WorkflowPending)
	if wf.Status.Message != engine.ThrottledMessage {
		t.Errorf("second workflow's message = %q, want %q", wf.Status.Message, engine.ThrottledMessage)
	}
	if n := len(e.pods(second)); n != 0 {
		t.Errorf("second workflow has %d pods while throttled, want 0", n)
	}
	if phase := e.workflow(first).Status.Phase; phase != wfv1.WorkflowRunning {
		t.Errorf("first workflow is %s while the second waits, want Running", phase)
	}

	close(gate)
	e.waitPhase(first, wfv1.WorkflowSucceeded)
	e.waitPhase(second, wfv1.WorkflowSucceeded)
}

// reasons are the Event reasons recorded on a workflow, once its WorkflowSucceeded Event is visible: the
// controller's Event sink writes in order, so the node Events of the same and earlier passes are there.
func (e *env) reasons(workflow string) []string {
	e.t.Helper()
	var reasons []string
	e.waitFor("recorded WorkflowSucceeded on "+workflow, func(ctx context.Context) (bool, error) {
		events, err := e.Kube.CoreV1().Events(e.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + workflow})
		if err != nil {
			return false, err
		}
		reasons = reasons[:0]
		for _, ev := range events.Items {
			reasons = append(reasons, ev.Reason)
		}
		return slices.Contains(reasons, engine.ReasonWorkflowSucceeded), nil
	})
	return reasons
}

// TestNodeEventsDisabledStopsNodeEvents: nodeEvents.enabled false stops the WorkflowNode* Events and
// keeps the workflow's own; enabling it again (no restart) brings them back.
func TestNodeEventsDisabledStopsNodeEvents(t *testing.T) {
	e := start(t, "nodeEvents: {enabled: false}\n", simnode.Script{})
	quiet := e.Submit(twoSteps).Name
	e.waitPhase(quiet, wfv1.WorkflowSucceeded)
	if got := e.reasons(quiet); slices.ContainsFunc(got, engine.IsNodeEvent) {
		t.Errorf("events with node events disabled: %v, want none of WorkflowNode*", got)
	}

	e.writeConfig("nodeEvents: {enabled: true}\n", false)
	e.waitFor("took the edit", func(context.Context) (bool, error) { return e.watcher.Current().NodeEvents.IsEnabled(), nil })
	loud := e.Submit(twoSteps).Name
	e.waitPhase(loud, wfv1.WorkflowSucceeded)
	if got := e.reasons(loud); !slices.Contains(got, engine.ReasonNodeSucceeded) {
		t.Errorf("events with node events enabled: %v, want %s among them", got, engine.ReasonNodeSucceeded)
	}
}

// TestRetentionPolicyDeletesTheOldestCompletedWorkflows: with retentionPolicy.completed 1, of three
// succeeded workflows one stays (the newest; creation times tie within a second, so which one is not
// asserted here: retention's unit tests check the order).
func TestRetentionPolicyDeletesTheOldestCompletedWorkflows(t *testing.T) {
	e := start(t, "retentionPolicy: {completed: 1, failed: 5, errored: 5}\n", simnode.Script{})
	for range 3 {
		e.Submit(twoSteps)
	}
	e.waitFor("kept one succeeded workflow of three", func(ctx context.Context) (bool, error) {
		list, err := e.Argo.ArgoprojV1alpha1().Workflows(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 1 && list.Items[0].Status.Phase == wfv1.WorkflowSucceeded, nil
	})
}

// Defaults the API server refuses on every write end each new workflow Error as its submitter stored it,
// with a SpecError condition and a Warning Event saying so (I10: nothing the controller merges in may wedge
// a workflow with no phase); once the defaults are fixed, the next workflow runs. The submitter may only
// create and get workflows: nothing it can do would end the workflow.
func TestWorkflowDefaultsThatMakeAWorkflowUnstorableEndItErrorAsStored(t *testing.T) {
	oneStepOf := func(param int) string {
		return `
metadata: {generateName: submitted-}
spec:
  entrypoint: main
  arguments: {parameters: [{name: p, value: "` + strings.Repeat("p", param) + `"}]}
  templates:
  - {name: main, container: {image: alpine, command: ["true"]}}
`
	}
	for _, tc := range []struct {
		sentence string
		defaults string // workflowDefaults
		param    int    // bytes of the submitted workflow's one parameter
		reason   string // the Warning Event
		cause    string // what the message quotes of the API server's refusal
	}{
		{"a 300 KiB default annotation is over the API server's limit on a workflow's annotations",
			"metadata: {annotations: {big: " + strings.Repeat("a", 300<<10) + "}}", 1, controller.ReasonStatusInvalid, "metadata.annotations: Too long"},
		{"a 950 KiB default pod annotation takes a 700 KiB workflow over etcd's request limit",
			"spec: {podMetadata: {annotations: {big: " + strings.Repeat("a", 950<<10) + "}}}", 700 << 10, controller.ReasonStatusTooLarge, "too large"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := start(t, "workflowDefaults:\n  "+tc.defaults+"\n", simnode.Script{})
			alice := harness.NewWorkflows(t, e.Grant(cp.Config(), "alice",
				rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group}, Resources: []string{"workflows"}, Verbs: []string{"create", "get"}}), e.Namespace)

			wf := alice.Submit(oneStepOf(tc.param))
			done := e.WaitFor(wf.Name, "completed", timeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
			msg := done.Status.Message
			if done.Status.Phase != wfv1.WorkflowError || !strings.HasPrefix(msg, "workflow cannot be stored with the metadata and spec the controller merged into it") ||
				!strings.Contains(msg, tc.cause) || len(msg) > 1024 {
				t.Errorf("phase = %s %q, want Error saying the merged defaults make it unstorable (%s), bounded", done.Status.Phase, msg, tc.cause)
			}
			if _, merged := done.Annotations["big"]; merged || done.Spec.PodMetadata != nil || len(done.Spec.Arguments.Parameters[0].Value.String()) != tc.param {
				t.Errorf("the workflow was not stored as submitted: default annotation %v, podMetadata %v", merged, done.Spec.PodMetadata != nil)
			}
			if done.Labels[common.LabelKeyCompleted] != "true" || done.Labels[common.LabelKeyPhase] != string(wfv1.WorkflowError) {
				t.Errorf("labels = %v, want argo's completed and phase labels", done.Labels)
			}
			if c := conditionOf(done, controller.ConditionUnstorable); c == nil || c.Status != metav1.ConditionTrue || c.Message != msg {
				t.Errorf("condition %s = %+v, want True with the workflow's message", controller.ConditionUnstorable, c)
			}
			if got := harness.Messages(e.WaitEvent("", wf.Name, tc.reason)); len(got) == 0 || got[0] != msg {
				t.Errorf("Warning Event %s = %q, want the workflow's message", tc.reason, got)
			}
			e.waitFor("released every pod of the workflow", func(context.Context) (bool, error) {
				for _, pod := range e.pods(wf.Name) {
					if slices.Contains(pod.Finalizers, podfinalizer.Finalizer) {
						return false, nil
					}
				}
				return true, nil
			})

			e.writeConfig("workflowDefaults: {metadata: {annotations: {team: fixed}}}\n", false)
			e.waitFor("took the fixed defaults", func(context.Context) (bool, error) {
				d := e.watcher.Current().WorkflowDefaults
				return d != nil && d.Annotations["team"] == "fixed", nil
			})
			next := e.waitPhase(alice.Submit(oneStepOf(1)).Name, wfv1.WorkflowSucceeded)
			if next.Annotations["team"] != "fixed" {
				t.Errorf("the next workflow's annotations = %v, want the fixed default team=fixed", next.Annotations)
			}
		})
	}
}

func conditionOf(wf *wfv1.Workflow, t wfv1.ConditionType) *wfv1.Condition {
	for i := range wf.Status.Conditions {
		if wf.Status.Conditions[i].Type == t {
			return &wf.Status.Conditions[i]
		}
	}
	return nil
}

// Found reviewing issue #44's fixes: the Workflow CRD has no status subresource, so whoever may create a
// workflow may create it with a status. "Running" or "Pending" made the controller skip what it checks when
// it first sees a workflow — here the ConfigMap's workflowRestrictions, which require a workflowTemplateRef —
// and a status.storedWorkflowSpec made a workflowTemplateRef run other templates than the template's. A
// workflow the controller did not start is checked as a new one.
func TestAStatusWrittenAtCreationSkipsNoneOfTheChecksOfANewWorkflow(t *testing.T) {
	e := start(t, "workflowRestrictions: {templateReferencing: Strict}\n", simnode.Script{})
	approved := &wfv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "approved"}, Spec: wfv1.WorkflowSpec{Entrypoint: "main",
		Templates: []wfv1.Template{{Name: "main", Container: &corev1.Container{Image: "alpine", Command: []string{"echo", "approved"}}}}}}
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTemplates(e.Namespace).Create(t.Context(), approved, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := versioned.NewForConfigOrDie(e.Grant(cp.Config(), "alice",
		rbacv1.PolicyRule{APIGroups: []string{wfv1.SchemeGroupVersion.Group}, Resources: []string{"workflows"}, Verbs: []string{"create", "get"}}))
	inline := wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
		Container: &corev1.Container{Image: "alpine", Command: []string{"echo", "inline"}}}}}
	evil := &wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
		Container: &corev1.Container{Image: "alpine", Command: []string{"echo", "evil"}}}}}
	for _, tc := range []struct {
		sentence string
		spec     wfv1.WorkflowSpec
		status   wfv1.WorkflowStatus
		want     wfv1.WorkflowPhase
		message  string // substring of the workflow's message
	}{
		{"an inline workflow created Running is refused as a new one would be", inline,
			wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}, wfv1.WorkflowError, engine.ReferenceModeMessage},
		{"an inline workflow created Pending is refused as a new one would be", inline,
			wfv1.WorkflowStatus{Phase: wfv1.WorkflowPending}, wfv1.WorkflowError, engine.ReferenceModeMessage},
		{"a workflowTemplateRef created Running with its own storedWorkflowSpec runs none of it", wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "approved"}},
			wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, StoredWorkflowSpec: evil}, wfv1.WorkflowError, "is not the spec workflow template approved gives"},
		{"a workflowTemplateRef submitted as usual runs the template", wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "approved"}},
			wfv1.WorkflowStatus{}, wfv1.WorkflowSucceeded, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{GenerateName: "created-"}, Spec: tc.spec, Status: tc.status}
			created, err := alice.ArgoprojV1alpha1().Workflows(e.Namespace).Create(t.Context(), wf, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			done := e.WaitFor(created.Name, "completed", timeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
			if done.Status.Phase != tc.want || !strings.Contains(done.Status.Message, tc.message) {
				t.Errorf("workflow = %s %q, want %s %q", done.Status.Phase, done.Status.Message, tc.want, tc.message)
			}
			for _, pod := range e.pods(created.Name) {
				for _, c := range pod.Spec.Containers {
					if c.Name == "main" && !slices.Contains(c.Command, "approved") {
						t.Errorf("pod %s runs %v: only the approved template may run", pod.Name, c.Command)
					}
				}
			}
		})
	}
}

// Found reviewing issue #44's fixes: deleting the controller ConfigMap while the controller ran brought the
// defaults back at once, dropping its fences (here workflowRestrictions) on the word of whoever may delete a
// ConfigMap there. The last valid config now stays in force until a restart, with a Warning Event.
func TestDeletingTheConfigMapKeepsItsFencesUntilARestart(t *testing.T) {
	e := start(t, "workflowRestrictions: {templateReferencing: Strict}\n", simnode.Script{})
	if err := e.Kube.CoreV1().ConfigMaps(e.ctlNS).Delete(t.Context(), controllerconfig.DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WithT(t).InNamespace(e.ctlNS).WaitEvent("ConfigMap", controllerconfig.DefaultName, controllerconfig.ReasonConfigMapDeleted)
	wf := e.Submit(twoSteps)
	done := e.WaitFor(wf.Name, "completed", timeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
	if done.Status.Phase != wfv1.WorkflowError || done.Status.Message != engine.ReferenceModeMessage {
		t.Errorf("an inline workflow after the deletion = %s %q, want Error %q: the restriction must stay in force", done.Status.Phase, done.Status.Message, engine.ReferenceModeMessage)
	}
}

// TestAPodGCInTheWorkflowDefaultsCollectsThePodsOfEveryWorkflow: the platform's podGC OnPodSuccess for
// everyone (workflowDefaults) collects the succeeded pods of a workflow submitted with its templates and of
// one submitted from a WorkflowTemplate (`argo submit --from`), keeping the failed pods, as argo does
// (issue #46: wfguard failed the latter at start).
func TestAPodGCInTheWorkflowDefaultsCollectsThePodsOfEveryWorkflow(t *testing.T) {
	e := start(t, "workflowDefaults: {spec: {podGC: {strategy: OnPodSuccess}}}\n", simnode.AnnotationScript(simnode.Behavior{}, t.Logf))
	const spec = `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: good, template: ok}, {name: bad, template: fail, continueOn: {failed: true}}]]
  - {name: ok, container: {image: alpine, command: ["true"]}}
  - name: fail
    metadata: {annotations: {simnode.wfguard.io/exit-code: "1"}}
    container: {image: alpine, command: ["false"]}
`
	tmpl := &wfv1.WorkflowTemplate{}
	if err := yaml.UnmarshalStrict([]byte("metadata: {name: steps}\nspec:"+spec), tmpl); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTemplates(e.Namespace).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sentence, manifest string }{
		{"a workflow with its own templates", "metadata: {name: own}\nspec:" + spec},
		{"a workflow from a WorkflowTemplate", "metadata: {name: from-template}\nspec: {workflowTemplateRef: {name: steps}}\n"},
	} {
		wf := e.Submit(tc.manifest)
		done := e.WaitFor(wf.Name, "completed", timeout, func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() })
		if done.Status.Phase != wfv1.WorkflowSucceeded {
			t.Fatalf("%s: phase = %s %q, want Succeeded\n%s", tc.sentence, done.Status.Phase, done.Status.Message, harness.Describe(done))
		}
		e.waitFor(tc.sentence+": collected the succeeded pod and kept the failed one", func(context.Context) (bool, error) {
			pods := e.pods(wf.Name)
			return len(pods) == 1 && pods[0].Annotations[common.AnnotationKeyNodeName] == wf.Name+"[0].bad", nil
		})
	}
}
