package doctor_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/doctor"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/taskresult"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var (
	cp     *controlplane.ControlPlane
	update = flag.Bool("update", false, "rewrite the golden files in testdata/")
)

func TestMain(m *testing.M) {
	// No controller-manager: nothing garbage-collects the pods of deleted workflows, so the states built
	// here stay exactly as written.
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// env is one namespace on the shared control plane and the clients to build states in it.
type env struct {
	t       *testing.T
	ns      string
	kube    kubernetes.Interface
	argo    versioned.Interface
	actions *actionsv1.Client
	clients *inspect.Clients
	// start is when the test began (seconds); times in status are set relative to it.
	start time.Time
}

// newEnv creates a namespace. With reporting, its default ServiceAccount may write task results
// (config/rbac/executor_role.yaml bound to it), as in an installed cluster.
func newEnv(t *testing.T, reporting bool) *env {
	t.Helper()
	clients, err := inspect.NewClients(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, kube: clients.Kube, argo: clients.Argo, actions: clients.Actions, clients: clients,
		start: time.Now().UTC().Truncate(time.Second)}
	if e.ns, err = controlplane.CreateNamespace(t.Context(), cp.Config(), "doctor"); err != nil {
		t.Fatal(err)
	}
	if reporting {
		harness.BindExecutorRole(t, cp.Config(), e.ns)
	}
	return e
}

const spec = `
entrypoint: main
templates:
- name: main
  steps: [[{name: produce, template: produce}, {name: other, template: produce}], [{name: approve, template: approve}]]
- name: produce
  container: {image: alpine, command: [sh, -c, "echo 1 > /tmp/out"]}
  outputs:
    parameters: [{name: out, valueFrom: {path: /tmp/out}}]
- name: approve
  suspend: {}
`

// node describes one node of a workflow's status; IDs come from the names.
type node struct {
	name     string // the part after the workflow name, e.g. "[0].produce"; "" is the root
	typ      wfv1.NodeType
	phase    wfv1.NodePhase
	message  string
	template string
	synced   *bool
	started  time.Time
	finished time.Time
	outputs  *wfv1.Outputs
	children []string
	// waitingSince, when set, records the node's wait for its task result as the controller does: in
	// status.resultWaits, with the node message saying so.
	waitingSince time.Time
}

func boolPtr(b bool) *bool { return &b }

// workflow creates a workflow with the given status phase and nodes (no controller runs: the status is
// exactly what is written).
func (e *env) workflow(name string, phase wfv1.WorkflowPhase, nodes []node, mutate func(*wfv1.Workflow)) *wfv1.Workflow {
	e.t.Helper()
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
	if err := yaml.UnmarshalStrict([]byte(spec), &wf.Spec); err != nil {
		e.t.Fatal(err)
	}
	wf.Status.Phase = phase
	wf.Status.StartedAt = metav1.NewTime(e.start.Add(-30 * time.Minute))
	if phase.Completed() {
		wf.Status.FinishedAt = metav1.NewTime(e.start.Add(-20 * time.Minute))
		wf.Labels = map[string]string{common.LabelKeyCompleted: "true"}
	}
	wf.Status.Nodes = wfv1.Nodes{}
	var ext extstatus.Extensions
	for _, n := range nodes {
		full := name + n.name
		status := wfv1.NodeStatus{ID: wf.NodeID(full), Name: full, DisplayName: displayName(name, n.name), Type: n.typ, Phase: n.phase,
			Message: n.message, TemplateName: n.template, TaskResultSynced: n.synced, StartedAt: metav1.NewTime(n.started),
			FinishedAt: metav1.NewTime(n.finished), Outputs: n.outputs}
		if !n.waitingSince.IsZero() {
			status.Message = "waiting for task result (since " + n.waitingSince.UTC().Format(time.RFC3339) + ")"
			taskresult.RecordWait(&ext, status.ID, n.waitingSince)
		}
		for _, c := range n.children {
			status.Children = append(status.Children, wf.NodeID(name+c))
		}
		wf.Status.Nodes[status.ID] = status
	}
	if mutate != nil {
		mutate(wf)
	}
	// Through the dynamic client: argo's typed one would drop wfguard's status extensions.
	wf.TypeMeta = metav1.TypeMeta{APIVersion: wfv1.WorkflowSchemaGroupVersionKind.GroupVersion().String(), Kind: wfv1.WorkflowSchemaGroupVersionKind.Kind}
	u, err := extstatus.ToUnstructured(wf, ext)
	if err != nil {
		e.t.Fatal(err)
	}
	stored, err := e.clients.Dynamic.Resource(wfv1.WorkflowSchemaGroupVersionKind.GroupVersion().WithResource("workflows")).Namespace(e.ns).Create(e.t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created, _, err := extstatus.FromUnstructured(stored)
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func displayName(wf, suffix string) string {
	if suffix == "" {
		return wf
	}
	for i := len(suffix) - 1; i >= 0; i-- {
		if suffix[i] == '.' {
			return suffix[i+1:]
		}
	}
	return suffix
}

// pod creates the pod of a node, as wfguard builds it, then writes its status (no kubelet runs).
func (e *env) pod(wf *wfv1.Workflow, nodeName string, finalizer bool, status corev1.PodStatus) *corev1.Pod {
	e.t.Helper()
	id := wf.NodeID(wf.Name + nodeName)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: e.ns,
			Labels:          map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyCompleted: "false", podspec.LabelWorkflowUID: string(wf.UID)},
			Annotations:     map[string]string{common.AnnotationKeyNodeID: id, common.AnnotationKeyNodeName: wf.Name + nodeName},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(wf, wfv1.SchemeGroupVersion.WithKind("Workflow"))}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
	}
	if finalizer {
		pod.Finalizers = []string{common.FinalizerPodStatus}
		pod.Annotations[podspec.AnnotationStatusFinalizerManaged] = "true"
	}
	created, err := e.kube.CoreV1().Pods(e.ns).Create(e.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created.Status = status
	updated, err := e.kube.CoreV1().Pods(e.ns).UpdateStatus(e.t.Context(), created, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return updated
}

// ended is the status of a pod whose main container exited with phase at t.
func ended(phase corev1.PodPhase, t time.Time) corev1.PodStatus {
	code := int32(0)
	if phase == corev1.PodFailed {
		code = 1
	}
	return corev1.PodStatus{Phase: phase, StartTime: &metav1.Time{Time: t.Add(-time.Minute)}, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code,
			StartedAt: metav1.NewTime(t.Add(-time.Minute)), FinishedAt: metav1.NewTime(t)}}}}}
}

func running(t time.Time) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: t}}
}

// result creates a node's task result as argoexec does: named after the node ID, owned by the workflow,
// labelled with report-outputs-completed.
func (e *env) result(wf *wfv1.Workflow, nodeName string, complete bool, outputs *wfv1.Outputs) *wfv1.WorkflowTaskResult {
	e.t.Helper()
	r := &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Name: wf.NodeID(wf.Name + nodeName), Namespace: e.ns,
			Labels:          map[string]string{common.LabelKeyWorkflow: wf.Name, common.LabelKeyReportOutputsCompleted: fmt.Sprint(complete)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID}}},
		NodeResult: wfv1.NodeResult{Outputs: outputs},
	}
	created, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).Create(e.t.Context(), r, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func (e *env) action(name, workflow, action string) *actionsv1.WorkflowAction {
	e.t.Helper()
	a, err := e.actions.Namespace(e.ns).Create(e.t.Context(), &actionsv1.WorkflowAction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       actionsv1.WorkflowActionSpec{WorkflowRef: actionsv1.WorkflowRef{Name: workflow}, Action: action},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) deleteWorkflow(wf *wfv1.Workflow) {
	e.t.Helper()
	if err := e.argo.ArgoprojV1alpha1().Workflows(e.ns).Delete(e.t.Context(), wf.Name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// now is the audit's clock: six minutes after the test began, so objects the API server stamped at
// creation are older than the default thresholds for transient states (1m) and pending actions (5m).
func (e *env) now() time.Time { return e.start.Add(6 * time.Minute) }

func (e *env) audit() doctor.Report {
	return doctor.Audit(e.t.Context(), e.clients, doctor.Options{Namespace: e.ns, Now: e.now()})
}

// impersonating returns clients acting as user (the admin may impersonate anyone).
func impersonating(t *testing.T, user string) *inspect.Clients {
	t.Helper()
	config := cp.Config()
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := inspect.NewClients(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
