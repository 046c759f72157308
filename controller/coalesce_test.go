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
	"k8s.io/utils/ptr"

	"github.com/wfguard/wfguard/extstatus"
)

// withRecords sets the workflow's write-ahead records to one per UID (Encode mirrors them).
func withRecords(uids ...string) func(*wfv1.Workflow, *extstatus.Extensions) {
	return func(_ *wfv1.Workflow, ext *extstatus.Extensions) {
		ext.AppliedActions = nil
		for _, uid := range uids {
			ext.AppliedActions = append(ext.AppliedActions, extstatus.AppliedAction{UID: types.UID(uid), Outcome: "Succeeded"})
		}
	}
}

// aRunningWorkflowWithNode is a running workflow with one Pending node, a.
func aRunningWorkflowWithNode() *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf"}}
	wf.Status.Phase = wfv1.WorkflowRunning
	wf.Status.Nodes = wfv1.Nodes{"a": {ID: "a", Phase: wfv1.NodePending}}
	return wf
}

// onNode changes node a.
func onNode(change func(*wfv1.NodeStatus)) func(*wfv1.Workflow, *extstatus.Extensions) {
	return func(wf *wfv1.Workflow, _ *extstatus.Extensions) {
		n := wf.Status.Nodes["a"]
		change(&n)
		wf.Status.Nodes["a"] = n
	}
}

func TestOnlyChangesThatDecideNothingMayWaitForTheCoalescingWindow(t *testing.T) {
	synced := true
	phase := func(p wfv1.NodePhase) func(*wfv1.Workflow, *extstatus.Extensions) {
		return onNode(func(n *wfv1.NodeStatus) { n.Phase = p })
	}
	cases := []struct {
		sentence string
		from     func(*wfv1.Workflow, *extstatus.Extensions) // the stored state before the change (nil: one Pending node)
		change   func(*wfv1.Workflow, *extstatus.Extensions)
		want     bool
	}{
		{"the node got its host", nil, onNode(func(n *wfv1.NodeStatus) { n.HostNodeName = "n1" }), true},
		{"the node went from Pending to Running", nil, phase(wfv1.NodeRunning), true},
		{"the node's exit code arrived", nil, onNode(func(n *wfv1.NodeStatus) { n.Outputs = &wfv1.Outputs{ExitCode: ptr.To("0")} }), true},
		{"the node's pod IP, progress and resources duration arrived", nil, onNode(func(n *wfv1.NodeStatus) {
			n.PodIP, n.Progress, n.ResourcesDuration = "10.0.0.1", "1/1", wfv1.ResourcesDuration{"cpu": 1}
		}), true},
		{"the running node's result became synced", phase(wfv1.NodeRunning), onNode(func(n *wfv1.NodeStatus) { n.TaskResultSynced = &synced }), true},
		{"the failed node's result became synced, fulfilling it", phase(wfv1.NodeFailed), onNode(func(n *wfv1.NodeStatus) { n.TaskResultSynced = &synced }), false},
		{"the node succeeded", nil, phase(wfv1.NodeSucceeded), false},
		{"the node got a waiting message", nil, onNode(func(n *wfv1.NodeStatus) { n.Message = "waiting for its task result" }), false},
		{"a new node was created", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) {
			wf.Status.Nodes["b"] = wfv1.NodeStatus{ID: "b", Phase: wfv1.NodePending}
		}, false},
		{"the workflow completed", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) { wf.Status.Phase = wfv1.WorkflowSucceeded }, false},
		{"an action was recorded", nil, withRecords("x"), false},
		{"a label changed", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) { wf.Labels = map[string]string{"k": "v"} }, false},
		{"the spec changed", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) { wf.Spec.Entrypoint = "other" }, false},
		{"a node was removed", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) { delete(wf.Status.Nodes, "a") }, false},
		{"the node lost its phase", nil, phase(""), false},
		{"the node got its host and an input", nil, onNode(func(n *wfv1.NodeStatus) {
			n.HostNodeName, n.Inputs = "n1", &wfv1.Inputs{}
		}), false},
		{"the workflow's message changed", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) { wf.Status.Message = "m" }, false},
		{"an instant moved to another location only", nil, func(wf *wfv1.Workflow, _ *extstatus.Extensions) {
			wf.Status.StartedAt = metav1.NewTime(wf.Status.StartedAt.In(time.FixedZone("x", 3600)))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			before, beforeExt := aRunningWorkflowWithNode(), extstatus.Extensions{}
			before.Status.StartedAt = metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC))
			if tc.from != nil {
				tc.from(before, &beforeExt)
			}
			after, afterExt := before.DeepCopy(), copyExtensions(beforeExt)
			tc.change(after, &afterExt)
			if got := informationalOnly(before, after, &beforeExt, &afterExt); got != tc.want {
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
	node := func(phase wfv1.NodePhase, change ...func(*wfv1.NodeStatus)) wfv1.NodeStatus {
		n := wfv1.NodeStatus{Phase: phase}
		for _, ch := range change {
			ch(&n)
		}
		return n
	}
	host := func(n *wfv1.NodeStatus) { n.HostNodeName = "n1" }
	exitCode := func(n *wfv1.NodeStatus) { n.Outputs = &wfv1.Outputs{ExitCode: ptr.To("0")} }
	wf := func(nodes wfv1.Nodes) *wfv1.Workflow {
		return &wfv1.Workflow{Status: wfv1.WorkflowStatus{Nodes: nodes}}
	}
	cases := []struct {
		sentence      string
		before, after wfv1.Nodes
		want          time.Duration
	}{
		{"a node going from Pending to Running waits one window",
			wfv1.Nodes{"a": node(wfv1.NodePending)}, wfv1.Nodes{"a": node(wfv1.NodeRunning, host)}, time.Second},
		{"a running node's exit code waits five windows",
			wfv1.Nodes{"a": node(wfv1.NodeRunning)}, wfv1.Nodes{"a": node(wfv1.NodeRunning, exitCode)}, 5 * time.Second},
		{"a pending node's host waits five windows",
			wfv1.Nodes{"a": node(wfv1.NodePending)}, wfv1.Nodes{"a": node(wfv1.NodePending, host)}, 5 * time.Second},
		{"one node's outputs beside another node going Running wait one window",
			wfv1.Nodes{"a": node(wfv1.NodeRunning), "b": node(wfv1.NodePending)},
			wfv1.Nodes{"a": node(wfv1.NodeRunning, exitCode), "b": node(wfv1.NodeRunning)}, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := c.coalescingWindow(wf(tc.before), wf(tc.after)); got != tc.want {
				t.Errorf("window %s, want %s", got, tc.want)
			}
		})
	}
	off := &Controller{}
	if got := off.coalescingWindow(wf(wfv1.Nodes{"a": node(wfv1.NodeRunning)}), wf(wfv1.Nodes{"a": node(wfv1.NodeRunning, host)})); got != 0 {
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
	cases := []struct {
		sentence    string
		before      func(*wfv1.Workflow, *extstatus.Extensions)
		after       func(*wfv1.Workflow, *extstatus.Extensions)
		wantWritten bool
	}{
		{"pruning one of two records writes nothing", withRecords("x", "y"), withRecords("y"), false},
		{"pruning the last record writes nothing", withRecords("x"), withRecords(), false},
		{"a new record is written, with the pruning", withRecords("x", "y"), withRecords("y", "z"), true},
		{"a record whose outcome changed is written", withRecords("x"), func(_ *wfv1.Workflow, ext *extstatus.Extensions) {
			ext.AppliedActions = []extstatus.AppliedAction{{UID: "x", Outcome: "Failed"}}
		}, true},
		{"pruning with a phase change is written", withRecords("x"), func(wf *wfv1.Workflow, ext *extstatus.Extensions) {
			withRecords()(wf, ext)
			wf.Status.Phase = wfv1.WorkflowSucceeded
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, ext := aRunningWorkflowWithNode(), extstatus.Extensions{}
			tc.before(wf, &ext)
			// The stored copy, as decoded, carries the record's annotation mirror.
			data, err := extstatus.Encode(wf, ext)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			var d decodeCache
			after, afterExt, before, err := d.decode("ns/wf", u)
			if err != nil {
				t.Fatal(err)
			}
			tc.after(after, &afterExt)
			if written := !onlyPruned(before, after, &afterExt); written != tc.wantWritten {
				t.Errorf("written = %v, want %v", written, tc.wantWritten)
			}
		})
	}
}

// BenchmarkInformationalOnly prices the coalescing check every pass that changed something pays, on a
// 50-node workflow whose pass changed one node's host.
func BenchmarkInformationalOnly(b *testing.B) {
	var d decodeCache
	after, afterExt, before := passChangingLastNode(b, &d, runningWorkflow(b, 50, "10"), func(n *wfv1.NodeStatus) { n.HostNodeName = "n1" })
	b.ReportAllocs()
	for b.Loop() {
		if !informationalOnly(before.wf, after, &before.ext, &afterExt) {
			b.Fatal("a host change is informational")
		}
	}
}
