package controller

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/fakeapi"
)

// t0 is the fake clock's time when a fixture starts.
var t0 = time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC)

// fixture is a Controller built by New on fake clientsets and never Run (sample-controller's and
// cert-manager's pattern): a test fills its caches directly, calls one step of the controller, and asserts
// on the calls the fakes recorded, the Events and the metrics.
type fixture struct {
	t        *testing.T
	c        *Controller
	kube     *kubefake.Clientset
	argo     *argofake.Clientset
	dynamic  *dynamicfake.FakeDynamicClient // workflows and WorkflowActions, also for the REST-built clients
	recorder *record.FakeRecorder
	registry *prometheus.Registry
	clock    *testingclock.FakeClock
}

// newFixture builds a controller with opts on fakes holding objects (fakeapi.New: task results in the argo
// fake, workflows and actions, unstructured, in the dynamic fake, the rest in the kube fake). The caches
// start empty (cache fills them).
func newFixture(t *testing.T, opts Options, objects ...runtime.Object) *fixture {
	t.Helper()
	fakes := fakeapi.New(objects...)
	f := &fixture{t: t, kube: fakes.Kube, argo: fakes.Argo, dynamic: fakes.Dynamic, recorder: record.NewFakeRecorder(100),
		registry: prometheus.NewRegistry(), clock: testingclock.NewFakeClock(t0)}
	workflowsREST, err := dynamicRESTClient(fakeapi.Config(f.dynamic))
	if err != nil {
		t.Fatal(err)
	}
	actions, err := fakes.Actions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Registry, opts.Recorder, opts.Clock = f.registry, f.recorder, f.clock
	f.c, err = New(Clients{Kube: f.kube, Argo: f.argo, Dynamic: f.dynamic, WorkflowsREST: workflowsREST, Actions: actions}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.c.queue.ShutDown)
	return f
}

// cache puts objects in the controller's caches, as its informers would have delivered them.
func (f *fixture) cache(objects ...runtime.Object) {
	f.t.Helper()
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			err = f.c.inf.workflows.GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.c.inf.pods.GetIndexer().Add(o)
		case *wfv1.WorkflowTaskResult:
			err = f.c.inf.results.GetIndexer().Add(o)
		case *actionsv1.WorkflowAction:
			err = f.c.inf.actions.GetIndexer().Add(o)
		default:
			err = fmt.Errorf("no cache holds %T", obj)
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// events are the Events recorded so far ("Warning Reason message"), each once.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// calls are what a fake recorded, without the reads informers make (list, watch): "verb resource[/sub] name".
func calls(fake clienttesting.FakeClient) []string {
	var out []string
	for _, a := range fake.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		resource := a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			resource += "/" + sub
		}
		name := ""
		switch a := a.(type) {
		case clienttesting.GetAction:
			name = a.GetName()
		case clienttesting.PatchAction:
			name = a.GetName()
		case clienttesting.DeleteAction:
			name = a.GetName()
		case clienttesting.UpdateAction:
			name = nameOf(a.GetObject())
		case clienttesting.CreateAction:
			name = nameOf(a.GetObject())
		}
		out = append(out, strings.TrimSpace(a.GetVerb()+" "+resource+" "+name))
	}
	return out
}

func nameOf(obj runtime.Object) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

// workflow is wf as the API server stores it (with ext), at resourceVersion rv.
func workflow(t testing.TB, wf *wfv1.Workflow, ext extstatus.Extensions, rv string) *unstructured.Unstructured {
	t.Helper()
	wf = wf.DeepCopy()
	wf.ResourceVersion = rv
	u, err := extstatus.ToUnstructured(wf, ext)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// running is the running workflow ns/wf with nodes.
func running(nodes ...wfv1.NodeStatus) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "wf-uid",
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec:   wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: &corev1.Container{Image: "alpine", Command: []string{"true"}}}}},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, StartedAt: metav1.NewTime(t0.Add(-time.Hour)), Nodes: wfv1.Nodes{}}}
	for _, n := range nodes {
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

// podNode is the pod node name of workflow ns/wf, in phase since started.
func podNode(name string, phase wfv1.NodePhase, started time.Time) wfv1.NodeStatus {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return wfv1.NodeStatus{ID: fmt.Sprintf("wf-%d", h.Sum32()), Name: name, DisplayName: name, Type: wfv1.NodeTypePod,
		TemplateName: "main", Phase: phase, StartedAt: metav1.NewTime(started)}
}

// podOf is the pod the controller created for node n of wf.
func podOf(wf *wfv1.Workflow, n wfv1.NodeStatus, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: wf.Namespace, Name: podspec.PodName(wf.Name, n.Name, n.TemplateName, n.ID),
		UID: types.UID("pod-" + n.ID), ResourceVersion: "1", Labels: map[string]string{common.LabelKeyWorkflow: wf.Name},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: n.ID},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID}}},
		Status: corev1.PodStatus{Phase: phase}}
}

// pendingAction is a pending WorkflowAction of verb on workflow ns/wf, created at created: typed for the
// cache, and as the API stores it.
func pendingAction(t testing.TB, name, verb string, created time.Time) (*actionsv1.WorkflowAction, *unstructured.Unstructured) {
	t.Helper()
	a := &actionsv1.WorkflowAction{TypeMeta: metav1.TypeMeta{APIVersion: actionsv1.SchemeGroupVersion.String(), Kind: "WorkflowAction"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "5",
			CreationTimestamp: metav1.NewTime(created)},
		Spec: actionsv1.WorkflowActionSpec{WorkflowRef: actionsv1.WorkflowRef{Name: "wf"}, Action: verb}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	return a, &unstructured.Unstructured{Object: obj}
}

// actionOutcome is the stored action's status: "Phase Reason: message".
func (f *fixture) actionOutcome(name string) string {
	f.t.Helper()
	u, err := f.dynamic.Resource(actionsv1.SchemeGroupVersion.WithResource("workflowactions")).Namespace("ns").
		Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	reason, _, _ := unstructured.NestedString(u.Object, "status", "reason")
	message, _, _ := unstructured.NestedString(u.Object, "status", "message")
	return strings.TrimSpace(phase + " " + reason + ": " + message)
}

// storedWorkflow is workflow ns/wf as the dynamic fake holds it.
func (f *fixture) storedWorkflow() *unstructured.Unstructured {
	f.t.Helper()
	u, err := f.dynamic.Resource(workflowsResource).Namespace("ns").Get(f.t.Context(), "wf", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// sum is the total of a counter's series.
func sum(counter prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1024)
	counter.Collect(ch)
	close(ch)
	total := 0.0
	for m := range ch {
		var out dto.Metric
		if m.Write(&out) == nil {
			total += out.GetCounter().GetValue()
		}
	}
	return total
}

// counterValue is the value of an unlabelled counter, 0 before it is first counted.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
