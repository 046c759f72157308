package controller

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/wfguard/wfguard/extstatus"
)

// withRecords sets the workflow's write-ahead records (and their annotation mirror) to one per UID.
func withRecords(uids ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if len(uids) == 0 {
			unstructured.RemoveNestedField(u.Object, "status", "appliedActions")
			unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
			return
		}
		var records []any
		mirror := ""
		for _, uid := range uids {
			records = append(records, map[string]any{"uid": uid, "outcome": "Succeeded"})
			mirror += uid
		}
		_ = unstructured.SetNestedSlice(u.Object, records, "status", "appliedActions")
		_ = unstructured.SetNestedField(u.Object, mirror, "metadata", "annotations", extstatus.AnnotationAppliedActions)
	}
}

func TestOnlyChangesThatDecideNothingMayWaitForTheCoalescingWindow(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "wf"},
			"status": map[string]any{"phase": "Running", "nodes": map[string]any{
				"a": map[string]any{"id": "a", "phase": "Pending"},
			}},
		}}
	}
	set := func(path []string, v any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, path...) }
	}
	cases := []struct {
		sentence string
		from     func(*unstructured.Unstructured) // the stored state before the change (nil: base)
		change   func(*unstructured.Unstructured)
		want     bool
	}{
		{"the node got its host", nil, set([]string{"status", "nodes", "a", "hostNodeName"}, "n1"), true},
		{"the node went from Pending to Running", nil, set([]string{"status", "nodes", "a", "phase"}, "Running"), true},
		{"the node's exit code arrived", nil, set([]string{"status", "nodes", "a", "outputs"}, map[string]any{"exitCode": "0"}), true},
		{"the running node's result became synced", set([]string{"status", "nodes", "a", "phase"}, "Running"),
			set([]string{"status", "nodes", "a", "taskResultSynced"}, true), true},
		{"the failed node's result became synced, fulfilling it", set([]string{"status", "nodes", "a", "phase"}, "Failed"),
			set([]string{"status", "nodes", "a", "taskResultSynced"}, true), false},
		{"the node succeeded", nil, set([]string{"status", "nodes", "a", "phase"}, "Succeeded"), false},
		{"the node got a waiting message", nil, set([]string{"status", "nodes", "a", "message"}, "waiting for its task result"), false},
		{"a new node was created", nil, set([]string{"status", "nodes", "b"}, map[string]any{"id": "b", "phase": "Pending"}), false},
		{"the workflow completed", nil, set([]string{"status", "phase"}, "Succeeded"), false},
		{"an action was recorded", nil, set([]string{"status", "appliedActions"}, []any{"x"}), false},
		{"a label changed", nil, set([]string{"metadata", "labels"}, map[string]any{"k": "v"}), false},
		{"a node was removed", nil, func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "status", "nodes", "a") }, false},
		{"the node lost its phase", nil, func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "status", "nodes", "a", "phase")
		}, false},
		{"the node got its host and an input", nil, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "n1", "status", "nodes", "a", "hostNodeName")
			_ = unstructured.SetNestedField(u.Object, map[string]any{"parameters": []any{}}, "status", "nodes", "a", "inputs")
		}, false},
		{"the workflow's message changed", nil, set([]string{"status", "message"}, "m"), false},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			before := base()
			if tc.from != nil {
				tc.from(before)
			}
			after := before.DeepCopy()
			tc.change(after)
			if got := informationalOnly(before, after); got != tc.want {
				t.Errorf("informationalOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTheWindowStartsAtTheFirstDeferredPassAndEndsWithAWrite(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}, deferred: map[string]time.Time{}}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		sentence string
		at       time.Time
		window   time.Duration
		want     time.Duration
	}{
		{"the first informational pass waits the whole window", t0, time.Second, time.Second},
		{"a later one waits only what is left", t0.Add(300 * time.Millisecond), time.Second, 700 * time.Millisecond},
		{"a detail-only one waits what is left of its longer window", t0.Add(600 * time.Millisecond), 5 * time.Second, 4400 * time.Millisecond},
		{"once the window is over it writes", t0.Add(time.Second), time.Second, 0},
	}
	for _, s := range steps {
		if got := c.coalesce("ns/wf", s.at, s.window); got != s.want {
			t.Fatalf("%s: got %s, want %s", s.sentence, got, s.want)
		}
	}
	c.closeWindow("ns/wf")
	if got := c.coalesce("ns/wf", t0.Add(5*time.Second), time.Second); got != time.Second {
		t.Fatalf("after a write a new window starts: got %s", got)
	}
	off := &Controller{deferred: map[string]time.Time{}}
	if got := off.coalesce("ns/wf", t0, 0); got != 0 {
		t.Fatalf("a zero window writes every pass: got %s", got)
	}
}

func TestTheWindowOfAChangeStartsAtItsFirstEventAndAnUnchangedPassClosesOnlyWhatItSaw(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}, deferred: map[string]time.Time{}}
	t0 := time.Unix(1000, 0)
	passNow := func(at time.Time) time.Time { return at.UTC().Truncate(time.Second) } // as newPass
	c.noteInformational("ns/wf", t0.Add(700*time.Millisecond))
	c.noteInformational("ns/wf", t0.Add(900*time.Millisecond))
	if got := c.coalesce("ns/wf", passNow(t0.Add(1700*time.Millisecond)), time.Second); got != 0 {
		t.Fatalf("the pass the first event brings one window later should write, not wait %s more", got)
	}
	if got := c.coalesce("ns/wf", passNow(t0.Add(1700*time.Millisecond)), 5*time.Second); got != 4*time.Second {
		t.Fatalf("details alone wait the rest of five windows from the first event: got %s", got)
	}
	c.closeWindowBefore("ns/wf", passNow(t0.Add(2*time.Second))) // a pass that found nothing to write
	if got := c.coalesce("ns/wf", t0.Add(10*time.Second), time.Second); got != time.Second {
		t.Fatalf("after an unchanged pass an old event no longer shortens the window of a new change: got %s", got)
	}
	c.closeWindow("ns/wf")
	c.noteInformational("ns/wf", t0.Add(20*time.Second))
	c.closeWindowBefore("ns/wf", t0.Add(19*time.Second)) // began before the event: it did not see it
	if got := c.coalesce("ns/wf", t0.Add(21*time.Second), time.Second); got != 0 {
		t.Fatalf("an unchanged pass that began before an event should leave that event's window open: got %s", got)
	}
}

func TestANodeGoingRunningWaitsOneWindowAndItsDetailsWaitFive(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}}
	node := func(phase string, fields ...any) map[string]any {
		n := map[string]any{"phase": phase}
		for i := 0; i+1 < len(fields); i += 2 {
			n[fields[i].(string)] = fields[i+1]
		}
		return n
	}
	wf := func(nodes map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"nodes": nodes}}}
	}
	cases := []struct {
		sentence      string
		before, after map[string]any
		want          time.Duration
	}{
		{"a node going from Pending to Running waits one window",
			map[string]any{"a": node("Pending")}, map[string]any{"a": node("Running", "hostNodeName", "n1")}, time.Second},
		{"a running node's exit code waits five windows",
			map[string]any{"a": node("Running")}, map[string]any{"a": node("Running", "outputs", map[string]any{"exitCode": "0"})}, 5 * time.Second},
		{"a pending node's host waits five windows",
			map[string]any{"a": node("Pending")}, map[string]any{"a": node("Pending", "hostNodeName", "n1")}, 5 * time.Second},
		{"one node's outputs beside another node going Running wait one window",
			map[string]any{"a": node("Running"), "b": node("Pending")},
			map[string]any{"a": node("Running", "outputs", map[string]any{"exitCode": "0"}), "b": node("Running")}, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := c.coalescingWindow(wf(tc.before), wf(tc.after)); got != tc.want {
				t.Errorf("window %s, want %s", got, tc.want)
			}
		})
	}
	off := &Controller{}
	if got := off.coalescingWindow(wf(map[string]any{"a": node("Running")}), wf(map[string]any{"a": node("Running", "hostNodeName", "n1")})); got != 0 {
		t.Errorf("with coalescing off a detail still waits %s", got)
	}
}

func TestOnlyPodAndResultEventsThatMayDecideSomethingAreReconciledAtOnce(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}}
	pod := func(phase corev1.PodPhase, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"workflows.argoproj.io/status"}}, Status: corev1.PodStatus{Phase: phase}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	result := func(completed string) *wfv1.WorkflowTaskResult {
		return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf-1",
			Labels: map[string]string{common.LabelKeyReportOutputsCompleted: completed, common.LabelKeyWorkflow: "wf"}}}
	}
	// The pod cache holds the controller's running pod of node wf-2 and its ended pod of node wf-3, and a
	// running pod someone else made that claims node wf-4 (owner, label and annotation, but not its name).
	pods := cache.NewSharedIndexInformer(nil, &corev1.Pod{}, 0, cache.Indexers{IndexWorkflowKey: indexByWorkflowKey})
	for name, p := range map[string]struct {
		node  string
		phase corev1.PodPhase
	}{"wf-work-2": {"wf-2", corev1.PodRunning}, "wf-work-3": {"wf-3", corev1.PodSucceeded}, "mallory": {"wf-4", corev1.PodRunning}} {
		if err := pods.GetIndexer().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{common.LabelKeyWorkflow: "wf"}, Annotations: map[string]string{common.AnnotationKeyNodeID: p.node},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "wf", UID: "u"}}},
			Status: corev1.PodStatus{Phase: p.phase}}); err != nil {
			t.Fatal(err)
		}
	}
	c.inf = &informerSet{pods: pods}
	resultOf := func(node string, r *wfv1.WorkflowTaskResult) *wfv1.WorkflowTaskResult {
		r.Name = node
		return r
	}
	now := metav1.Now()
	ready := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true}}
	}
	notReady := func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main"}} }
	cases := []struct {
		sentence string
		old, obj any
		want     time.Duration
	}{
		{"a pod created Pending waits for its details window", nil, pod(corev1.PodPending), 5 * time.Second},
		{"a pod bound to a node waits for its details window", pod(corev1.PodPending), pod(corev1.PodPending, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), 5 * time.Second},
		{"a pod going Running waits one window: its node goes Running", pod(corev1.PodPending), pod(corev1.PodRunning), time.Second},
		{"a pod first seen Running waits one window", nil, pod(corev1.PodRunning), time.Second},
		{"a running pod turning ready waits one window: a daemon's successors may start", pod(corev1.PodRunning, notReady), pod(corev1.PodRunning, ready), time.Second},
		{"a running pod's container status change waits for its details window", pod(corev1.PodRunning), pod(corev1.PodRunning, func(p *corev1.Pod) { p.Status.PodIP = "1.2.3.4" }), 5 * time.Second},
		{"a pod that succeeds is reconciled at once", pod(corev1.PodRunning), pod(corev1.PodSucceeded), 0},
		{"a pod that fails is reconciled at once", pod(corev1.PodRunning), pod(corev1.PodFailed), 0},
		{"a pod being deleted is reconciled at once", pod(corev1.PodRunning), pod(corev1.PodRunning, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), 0},
		{"a pod losing its finalizer is reconciled at once", pod(corev1.PodSucceeded), pod(corev1.PodSucceeded, func(p *corev1.Pod) { p.Finalizers = nil }), 0},
		{"a terminal pod first seen (relist) is reconciled at once", nil, pod(corev1.PodSucceeded), 0},
		{"a result placeholder waits for its details window", nil, result("false"), 5 * time.Second},
		{"outputs before completion wait for their details window", result("false"), result("false"), 5 * time.Second},
		{"a result becoming complete is reconciled at once", result("false"), result("true"), 0},
		{"a result first seen complete is reconciled at once", nil, result("true"), 0},
		{"a result completing while its pod runs waits for its details window: the pod's end decides", result("false"), resultOf("wf-2", result("true")), 5 * time.Second},
		{"a result completing after its pod ended is reconciled at once", result("false"), resultOf("wf-3", result("true")), 0},
		{"a running pod that only claims the node does not hold its result back", result("false"), resultOf("wf-4", result("true")), 0},
		{"a result of another workflow's node is not held back by this one's pod", result("false"),
			resultOf("wf-2", func() *wfv1.WorkflowTaskResult {
				r := result("true")
				r.Labels[common.LabelKeyWorkflow] = "other"
				return r
			}()), 0},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := c.informationalDelay(tc.old, tc.obj); got != tc.want {
				t.Errorf("delay = %s, want %s", got, tc.want)
			}
		})
	}
	if got := (&Controller{}).informationalDelay(nil, pod(corev1.PodPending)); got != 0 {
		t.Errorf("with no window every event is reconciled at once, got %s", got)
	}
}

func TestTheEchoOfOurOwnWriteIsSkippedUnlessAPassWaitsForIt(t *testing.T) {
	c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}, written: map[types.UID]lastWrite{"u": {resourceVersion: "7"}}, staleWaiters: map[string]struct{}{}}
	wf := &metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "u", ResourceVersion: "7"}
	if !c.ownEcho(wf) {
		t.Fatal("our own write's echo should need no pass")
	}
	other := &metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "u", ResourceVersion: "8"}
	if c.ownEcho(other) {
		t.Fatal("someone else's write must be reconciled")
	}
	c.awaitEcho("ns/wf")
	if c.ownEcho(wf) {
		t.Fatal("a pass that skipped a stale copy waits for the echo: it must be reconciled")
	}
	if !c.ownEcho(wf) {
		t.Fatal("the wait is used up by one echo")
	}
}

func TestPruningAloneIsHeldForTheNextWrite(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "wf"}, "status": map[string]any{"phase": "Running"}}}
	}
	cases := []struct {
		sentence    string
		before      func(*unstructured.Unstructured)
		after       func(*unstructured.Unstructured)
		wantWritten bool
	}{
		{"pruning one of two records writes nothing", withRecords("x", "y"), withRecords("y"), false},
		{"pruning the last record writes nothing", withRecords("x"), withRecords(), false},
		{"a new record is written, with the pruning", withRecords("x", "y"), withRecords("y", "z"), true},
		{"a record whose outcome changed is written", withRecords("x"), func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"uid": "x", "outcome": "Failed"}}, "status", "appliedActions")
		}, true},
		{"pruning with a phase change is written", withRecords("x"), func(u *unstructured.Unstructured) {
			withRecords()(u)
			_ = unstructured.SetNestedField(u.Object, "Succeeded", "status", "phase")
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			before := base()
			tc.before(before)
			after := before.DeepCopy()
			tc.after(after)
			if written := !onlyPruned(before, after); written != tc.wantWritten {
				t.Errorf("written = %v, want %v", written, tc.wantWritten)
			}
		})
	}
}

// BenchmarkInformationalOnly prices the coalescing check every pass that changed something pays, on a
// 50-node workflow whose pass changed one node's host.
func BenchmarkInformationalOnly(b *testing.B) {
	before := runningWorkflow(b, 50, "10")
	after := before.DeepCopy()
	nodes, _, _ := unstructured.NestedMap(after.Object, "status", "nodes")
	for id := range nodes {
		_ = unstructured.SetNestedField(after.Object, "n1", "status", "nodes", id, "hostNodeName")
		break
	}
	b.ReportAllocs()
	for b.Loop() {
		if !informationalOnly(before, after) {
			b.Fatal("a host change is informational")
		}
	}
}
