package simnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// env is one test's namespace, clients, workflow and simulated node.
type env struct {
	t    *testing.T
	ns   string
	kube kubernetes.Interface
	argo versioned.Interface
	wf   *wfv1.Workflow
	node *simnode.Node
}

func newEnv(t *testing.T, opts simnode.Options) *env {
	t.Helper()
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "sim")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: ns, kube: kubernetes.NewForConfigOrDie(cp.Config()), argo: versioned.NewForConfigOrDie(cp.Config())}
	e.wf, err = e.argo.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "wf"}, Spec: wfv1.WorkflowSpec{Entrypoint: "main"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Config, opts.Namespace, opts.Logf = cp.Config(), ns, t.Logf
	e.node, err = simnode.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.node.Stop)
	return e
}

var outputsTemplate = wfv1.Template{
	Name:      "produce",
	Container: &corev1.Container{Image: "busybox", Command: []string{"sh", "-c", "echo hi > /tmp/out"}},
	Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
		{Name: "out", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/out"}}}},
}

// createPod creates a pod laid out as argo's controller lays out a container (or containerSet) template's pod (§4.6).
func (e *env) createPod(nodeName string, tmpl wfv1.Template, includeScriptOutput, finalizer bool) *corev1.Pod {
	e.t.Helper()
	nodeID := e.wf.NodeID(nodeName)
	tmplJSON, err := json.Marshal(tmpl)
	if err != nil {
		e.t.Fatal(err)
	}
	execEnv := []corev1.EnvVar{
		{Name: "ARGO_POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: common.EnvVarWorkflowName, Value: e.wf.Name},
		{Name: common.EnvVarWorkflowUID, Value: string(e.wf.UID)},
		{Name: common.EnvVarNodeID, Value: nodeID},
		{Name: common.EnvVarIncludeScriptOutput, Value: fmt.Sprint(includeScriptOutput)},
	}
	mounts := []corev1.VolumeMount{{Name: "var-run-argo", MountPath: "/var/run/argo"}}
	var mains []corev1.Container
	if tmpl.ContainerSet != nil {
		mains = tmpl.ContainerSet.GetContainers()
	} else {
		main := tmpl.Container.DeepCopy()
		main.Name = common.MainContainerName
		mains = []corev1.Container{*main}
	}
	for i := range mains {
		mains[i].Command = append([]string{"/var/run/argo/argoexec", "emissary", "--"}, mains[i].Command...)
		mains[i].VolumeMounts = mounts
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            e.wf.Name + "-" + tmpl.Name + "-" + nodeID[len(e.wf.Name)+1:],
			Labels:          map[string]string{common.LabelKeyWorkflow: e.wf.Name, common.LabelKeyCompleted: "false"},
			Annotations:     map[string]string{common.AnnotationKeyNodeName: nodeName, common.AnnotationKeyNodeID: nodeID},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e.wf, wfv1.SchemeGroupVersion.WithKind("Workflow"))},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes:       []corev1.Volume{{Name: "var-run-argo", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{Name: common.InitContainerName, Image: "quay.io/argoproj/argoexec:v3.7.9",
				Command: []string{"argoexec", "init"}, VolumeMounts: mounts,
				Env: append(slices.Clone(execEnv), corev1.EnvVar{Name: common.EnvVarTemplate, Value: string(tmplJSON)})}},
			Containers: append([]corev1.Container{
				{Name: common.WaitContainerName, Image: "quay.io/argoproj/argoexec:v3.7.9", Command: []string{"argoexec", "wait"},
					Env: execEnv, VolumeMounts: mounts},
			}, mains...),
		},
	}
	if finalizer {
		pod.Finalizers = []string{common.FinalizerPodStatus}
	}
	created, err := e.kube.CoreV1().Pods(e.ns).Create(e.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

// waitPod waits until cond holds for the pod (or it is gone, passed as nil).
func (e *env) waitPod(name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(e.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := e.kube.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = nil
			return cond(nil), nil
		}
		if err != nil {
			return false, err
		}
		last = pod
		return cond(pod), nil
	})
	if err != nil {
		e.t.Fatalf("pod %s never %s (journal %v, last status %+v): %v", name, what, e.node.Journal(e.ns, name), statusOf(last), err)
	}
	return last
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return "<gone>"
	}
	return p.Status
}

func phaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == phase }
}

func (e *env) result(nodeID string) (*wfv1.WorkflowTaskResult, error) {
	return e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).Get(e.t.Context(), nodeID, metav1.GetOptions{})
}

func containerExit(pod *corev1.Pod, name string) int32 {
	for _, s := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if s.Name == name && s.State.Terminated != nil {
			return s.State.Terminated.ExitCode
		}
	}
	return -1
}

func TestHealthyPodRunsAndReportsItsResultInArgoexecOrder(t *testing.T) {
	hi := "hello"
	e := newEnv(t, simnode.Options{Script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
		"produce": {Parameters: map[string]string{"out": "hi"}, Result: &hi, RunFor: 50 * time.Millisecond},
	}}})
	// Watch results from before the pod exists, to see every write in order.
	w, err := e.argo.ArgoprojV1alpha1().WorkflowTaskResults(e.ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pod := e.createPod("wf.produce", outputsTemplate, true, false)
	nodeID := e.wf.NodeID("wf.produce")
	done := e.waitPod(pod.Name, "succeeded", phaseIs(corev1.PodSucceeded))

	for _, c := range []string{common.InitContainerName, common.WaitContainerName, common.MainContainerName} {
		if code := containerExit(done, c); code != 0 {
			t.Errorf("container %s exit code = %d, want 0", c, code)
		}
	}
	if done.Spec.NodeName != simnode.DefaultNodeName || done.Status.StartTime == nil || done.Status.PodIP == "" {
		t.Errorf("pod not bound and started like a kubelet would: node %q start %v ip %q",
			done.Spec.NodeName, done.Status.StartTime, done.Status.PodIP)
	}
	wantSteps := []string{simnode.StepBound, simnode.StepPending, simnode.StepRunning, simnode.StepResultCreated,
		simnode.StepMainExited, simnode.StepOutputsReported, simnode.StepResultFinalized, simnode.StepWaitExited, simnode.StepSucceeded}
	// The node journals a step after its write returns, so the Succeeded pod can be seen before its last
	// step is journaled: wait for the journal, not the pod.
	if err := e.node.WaitForStep(t.Context(), e.ns, pod.Name, simnode.StepSucceeded); err != nil {
		t.Fatal(err)
	}
	if got := e.node.Journal(e.ns, pod.Name); !slices.Equal(got, wantSteps) {
		t.Errorf("journal = %v, want %v", got, wantSteps)
	}

	// The result went through placeholder (false, no outputs) → outputs → label true, as argoexec writes it.
	type seen struct {
		label   string
		outputs bool
	}
	var writes []seen
	for len(writes) < 3 {
		select {
		case ev := <-w.ResultChan():
			r := ev.Object.(*wfv1.WorkflowTaskResult)
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				writes = append(writes, seen{r.Labels[common.LabelKeyReportOutputsCompleted], r.Outputs != nil})
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("saw only %d result writes: %+v", len(writes), writes)
		}
	}
	if want := []seen{{"false", false}, {"false", true}, {"true", true}}; !slices.Equal(writes, want) {
		t.Errorf("result writes = %+v, want %+v", writes, want)
	}
	r, err := e.result(nodeID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Labels[common.LabelKeyWorkflow] != "wf" || len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != e.wf.UID ||
		r.OwnerReferences[0].Kind != "Workflow" || r.OwnerReferences[0].Controller != nil {
		t.Errorf("result identity: labels %v owners %+v, want workflow label and a plain owner ref to %s", r.Labels, r.OwnerReferences, e.wf.UID)
	}
	if got := param(r.Outputs, "out"); got == nil || got.Value.String() != "hi" {
		t.Errorf("output parameter out = %+v, want hi", got)
	}
	if r.Outputs.Result == nil || *r.Outputs.Result != "hello" {
		t.Errorf("outputs.result = %v, want hello", r.Outputs.Result)
	}
}

func TestEachFaultDoesWhatItSays(t *testing.T) {
	cases := []struct {
		name      string
		behavior  simnode.Behavior
		wantPhase corev1.PodPhase
		// check inspects the final pod and result (nil when none exists).
		check func(t *testing.T, pod *corev1.Pod, r *wfv1.WorkflowTaskResult, journal []string)
	}{
		{
			name:      "result never created: the pod succeeds and no result exists",
			behavior:  simnode.Behavior{Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{NoResult: true}},
			wantPhase: corev1.PodSucceeded,
			check: func(t *testing.T, _ *corev1.Pod, r *wfv1.WorkflowTaskResult, journal []string) {
				if r != nil {
					t.Errorf("result exists: %+v", r)
				}
				if !slices.Contains(journal, simnode.StepResultNotCreated) {
					t.Errorf("journal %v lacks %s", journal, simnode.StepResultNotCreated)
				}
			},
		},
		{
			name:      "never finalized: outputs written, label stays false, pod succeeds",
			behavior:  simnode.Behavior{Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{NeverFinalize: true}},
			wantPhase: corev1.PodSucceeded,
			check: func(t *testing.T, _ *corev1.Pod, r *wfv1.WorkflowTaskResult, _ []string) {
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "false" || param(r.Outputs, "out") == nil {
					t.Errorf("result = %+v, want outputs with label false", r)
				}
			},
		},
		{
			name:      "outputs patch lost: finalized without outputs",
			behavior:  simnode.Behavior{Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{LoseOutputs: true}},
			wantPhase: corev1.PodSucceeded,
			check: func(t *testing.T, _ *corev1.Pod, r *wfv1.WorkflowTaskResult, _ []string) {
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" || r.Outputs != nil {
					t.Errorf("result = %+v, want label true and no outputs", r)
				}
			},
		},
		{
			name:      "wait exits non-zero: pod fails, result finalized without outputs",
			behavior:  simnode.Behavior{Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{WaitExitCode: 2}},
			wantPhase: corev1.PodFailed,
			check: func(t *testing.T, pod *corev1.Pod, r *wfv1.WorkflowTaskResult, _ []string) {
				if code := containerExit(pod, common.WaitContainerName); code != 2 {
					t.Errorf("wait exit = %d, want 2", code)
				}
				if code := containerExit(pod, common.MainContainerName); code != 0 {
					t.Errorf("main exit = %d, want 0", code)
				}
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" || r.Outputs != nil {
					t.Errorf("result = %+v, want finalized without outputs", r)
				}
			},
		},
		{
			name:      "main exits 1: pod fails with main's exit code, outputs still reported",
			behavior:  simnode.Behavior{ExitCode: 1, Parameters: map[string]string{"out": "x"}},
			wantPhase: corev1.PodFailed,
			check: func(t *testing.T, pod *corev1.Pod, r *wfv1.WorkflowTaskResult, _ []string) {
				if code := containerExit(pod, common.MainContainerName); code != 1 {
					t.Errorf("main exit = %d, want 1", code)
				}
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" {
					t.Errorf("result = %+v, want finalized", r)
				}
			},
		},
		{
			name:      "a declared output missing without default fails the wait container",
			behavior:  simnode.Behavior{},
			wantPhase: corev1.PodFailed,
			check: func(t *testing.T, pod *corev1.Pod, r *wfv1.WorkflowTaskResult, journal []string) {
				if code := containerExit(pod, common.WaitContainerName); code != 1 {
					t.Errorf("wait exit = %d, want 1", code)
				}
				if !slices.Contains(journal, simnode.StepExecutorError) {
					t.Errorf("journal %v lacks %s", journal, simnode.StepExecutorError)
				}
			},
		},
		{
			name:      "evicted: failed with reason Evicted and no container statuses",
			behavior:  simnode.Behavior{RunFor: 20 * time.Millisecond, Fault: simnode.Fault{Evict: true}},
			wantPhase: corev1.PodFailed,
			check: func(t *testing.T, pod *corev1.Pod, r *wfv1.WorkflowTaskResult, _ []string) {
				if pod.Status.Reason != "Evicted" || len(pod.Status.ContainerStatuses) != 0 {
					t.Errorf("status = reason %q, %d container statuses; want Evicted and none", pod.Status.Reason, len(pod.Status.ContainerStatuses))
				}
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "false" {
					t.Errorf("result = %+v, want only the placeholder", r)
				}
			},
		},
		{
			name:      "slow result writes still land in order",
			behavior:  simnode.Behavior{Parameters: map[string]string{"out": "x"}, Fault: simnode.Fault{ResultDelay: 100 * time.Millisecond}},
			wantPhase: corev1.PodSucceeded,
			check: func(t *testing.T, _ *corev1.Pod, r *wfv1.WorkflowTaskResult, journal []string) {
				if r == nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" {
					t.Errorf("result = %+v, want finalized", r)
				}
				if i, j := slices.Index(journal, simnode.StepResultFinalized), slices.Index(journal, simnode.StepWaitExited); i < 0 || i > j {
					t.Errorf("journal %v: the result must be finalized before the wait container exits", journal)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, simnode.Options{Script: simnode.Script{Default: tc.behavior}})
			pod := e.createPod("wf.produce", outputsTemplate, false, false)
			final := e.waitPod(pod.Name, "reached "+string(tc.wantPhase), phaseIs(tc.wantPhase))
			// The pod's phase is the last write of a run; the journal's terminal step follows it.
			step := simnode.StepSucceeded
			if tc.wantPhase == corev1.PodFailed {
				step = simnode.StepFailed
			}
			if err := e.node.WaitForStep(t.Context(), e.ns, pod.Name, step); err != nil {
				t.Fatal(err)
			}
			r, err := e.result(e.wf.NodeID("wf.produce"))
			if apierrors.IsNotFound(err) {
				r = nil
			} else if err != nil {
				t.Fatal(err)
			}
			tc.check(t, final, r, e.node.Journal(e.ns, pod.Name))
		})
	}
}

func TestADeletedPodStaysTerminatingUntilItsFinalizerIsRemoved(t *testing.T) {
	cases := []struct {
		name     string
		behavior simnode.Behavior
		// deleteIt deletes the pod (or lets the fault do it) once it is in the state under test.
		deleteIt func(e *env, pod *corev1.Pod)
	}{
		{
			name:     "a third party deletes it while it runs",
			behavior: simnode.Behavior{RunFor: 100 * time.Millisecond, Fault: simnode.Fault{DeleteWhileRunning: true}},
			deleteIt: func(*env, *corev1.Pod) {},
		},
		{
			name:     "a user deletes it after it succeeded",
			behavior: simnode.Behavior{Parameters: map[string]string{"out": "x"}},
			deleteIt: func(e *env, pod *corev1.Pod) {
				e.waitPod(pod.Name, "succeeded", phaseIs(corev1.PodSucceeded))
				if err := e.kube.CoreV1().Pods(e.ns).Delete(e.t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
					e.t.Fatal(err)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, simnode.Options{Script: simnode.Script{Default: tc.behavior}})
			pod := e.createPod("wf.produce", outputsTemplate, false, true)
			tc.deleteIt(e, pod)
			if err := e.node.WaitForStep(t.Context(), e.ns, pod.Name, simnode.StepDeleteFinalized); err != nil {
				t.Fatal(err)
			}
			held := e.waitPod(pod.Name, "terminating", func(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })
			if !terminalPhase(held) {
				t.Errorf("a deleted pod's final status must be terminal, got %s", held.Status.Phase)
			}
			if slices.Contains(e.node.Journal(e.ns, pod.Name), simnode.StepRemoved) {
				t.Fatalf("pod removed while it still had a finalizer")
			}
			patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"resourceVersion":%q}}`, held.ResourceVersion)
			if _, err := e.kube.CoreV1().Pods(e.ns).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			e.waitPod(pod.Name, "removed", func(p *corev1.Pod) bool { return p == nil })
			if err := e.node.WaitForStep(t.Context(), e.ns, pod.Name, simnode.StepRemoved); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func terminalPhase(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func TestExecutorWritesResultsWithThePodsServiceAccount(t *testing.T) {
	e := newEnv(t, simnode.Options{ImpersonateServiceAccount: true,
		Script: simnode.Script{Default: simnode.Behavior{Parameters: map[string]string{"out": "x"}}}})

	// Without executor RBAC the placeholder create is forbidden: argoexec fails the wait container.
	denied := e.createPod("wf.denied", outputsTemplate, false, false)
	e.waitPod(denied.Name, "failed", phaseIs(corev1.PodFailed))
	if _, err := e.result(e.wf.NodeID("wf.denied")); !apierrors.IsNotFound(err) {
		t.Errorf("result of the denied pod: err = %v, want NotFound", err)
	}

	// With the documented executor Role (workflowtaskresults create, patch) it succeeds.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "executor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"}, Verbs: []string{"create", "patch"}}}}
	if _, err := e.kube.RbacV1().Roles(e.ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "executor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "executor"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: e.ns}}}
	if _, err := e.kube.RbacV1().RoleBindings(e.ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := cp.Config()
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + e.ns + ":default",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + e.ns, "system:authenticated"}}
	if err := controlplanetest.WaitAuthorized(t.Context(), sa, authorizationv1.ResourceAttributes{
		Verb: "create", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: e.ns}); err != nil {
		t.Fatal(err)
	}
	allowed := e.createPod("wf.allowed", outputsTemplate, false, false)
	e.waitPod(allowed.Name, "succeeded", phaseIs(corev1.PodSucceeded))
	if r, err := e.result(e.wf.NodeID("wf.allowed")); err != nil || r.Labels[common.LabelKeyReportOutputsCompleted] != "true" {
		t.Errorf("result of the allowed pod = %+v, %v; want finalized", r, err)
	}
}

func TestAPodArgoexecCannotReadFailsInInit(t *testing.T) {
	e := newEnv(t, simnode.Options{})
	pod, err := e.kube.CoreV1().Pods(e.ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "no-template", Labels: map[string]string{common.LabelKeyWorkflow: "wf"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed := e.waitPod(pod.Name, "failed", phaseIs(corev1.PodFailed))
	if failed.Status.Message == "" || containerExit(failed, common.InitContainerName) != 1 {
		t.Errorf("status = %+v, want a message and init exit 1", failed.Status)
	}
}

func param(o *wfv1.Outputs, name string) *wfv1.Parameter {
	if o == nil {
		return nil
	}
	for i := range o.Parameters {
		if o.Parameters[i].Name == name {
			return &o.Parameters[i]
		}
	}
	return nil
}

func TestEveryContainerOfAContainerSetEndsWithThePod(t *testing.T) {
	set := wfv1.Template{Name: "set", ContainerSet: &wfv1.ContainerSetTemplate{Containers: []wfv1.ContainerNode{
		{Container: corev1.Container{Name: "a", Image: "busybox", Command: []string{"true"}}},
		{Container: corev1.Container{Name: "b", Image: "busybox", Command: []string{"true"}}, Dependencies: []string{"a"}},
	}}}
	for _, tc := range []struct {
		sentence string
		exit     int32
		phase    corev1.PodPhase
	}{
		{"a containerSet whose code succeeds ends every container 0 and the pod Succeeded", 0, corev1.PodSucceeded},
		{"a containerSet whose code fails ends every container with its exit and the pod Failed", 3, corev1.PodFailed},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := newEnv(t, simnode.Options{Script: simnode.Script{ByTemplate: map[string]simnode.Behavior{"set": {ExitCode: tc.exit}}}})
			pod := e.createPod("wf.set", set, false, false)
			done := e.waitPod(pod.Name, "ended", phaseIs(tc.phase))
			for _, c := range []string{"a", "b"} {
				if code := containerExit(done, c); code != tc.exit {
					t.Errorf("container %s exit code = %d, want %d", c, code, tc.exit)
				}
			}
			if code := containerExit(done, common.MainContainerName); code != -1 {
				t.Errorf("a container named main ended (%d), but the pod has none", code)
			}
		})
	}
}
