package doctor

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
)

// checkOptions are an audit's options an hour after t0, with the defaults.
func checkOptions() Options {
	o := Options{Now: t0.Add(time.Hour)}
	o.defaults()
	return o
}

// podOf is a pod of workflow wf (uid owner; "" is no owner) running node nodeID, created at created.
func podOf(name, wf string, owner types.UID, nodeID string, created time.Time) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pod-" + name),
		CreationTimestamp: metav1.NewTime(created), Annotations: map[string]string{common.AnnotationKeyNodeID: nodeID}}}
	if wf != "" {
		pod.Labels = map[string]string{common.LabelKeyWorkflow: wf}
	}
	if owner != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{Kind: "Workflow", Name: wf, UID: owner}}
	}
	return pod
}

func holding(pod *corev1.Pod) *corev1.Pod {
	pod.Finalizers = []string{common.FinalizerPodStatus}
	return pod
}

func deleting(pod *corev1.Pod, at time.Time) *corev1.Pod {
	t := metav1.NewTime(at)
	pod.DeletionTimestamp = &t
	return pod
}

// ended is the pod terminal in phase, its container finished at at.
func ended(pod *corev1.Pod, phase corev1.PodPhase, at time.Time) *corev1.Pod {
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}}
	return pod
}

func workflowOf(name string, uid types.UID, phase wfv1.WorkflowPhase, nodes ...wfv1.NodeStatus) *wfv1.Workflow {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, CreationTimestamp: metav1.NewTime(t0)},
		Status: wfv1.WorkflowStatus{Phase: phase, Nodes: wfv1.Nodes{}}}
	for _, n := range nodes {
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

func nodeOf(id string, typ wfv1.NodeType, phase wfv1.NodePhase, started, finished time.Time) wfv1.NodeStatus {
	return wfv1.NodeStatus{ID: id, Name: "wf." + id, DisplayName: id, Type: typ, Phase: phase,
		StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished)}
}

// Pins what finalizer-held finds, word for word and in order, and what it passes over.
func TestHeldFinalizersAreFoundOnlyWhereNothingMoreWillBeCaptured(t *testing.T) {
	o := checkOptions()
	young := o.Now.Add(-10 * time.Second)
	running := workflowOf("run", "u-run", wfv1.WorkflowRunning,
		nodeOf("final", wfv1.NodeTypePod, wfv1.NodeSucceeded, t0, t0.Add(time.Minute)),
		nodeOf("busy", wfv1.NodeTypePod, wfv1.NodeRunning, t0, time.Time{}),
		nodeOf("just-final", wfv1.NodeTypePod, wfv1.NodeSucceeded, t0, young),
		nodeOf("never-finished", wfv1.NodeTypePod, wfv1.NodeSucceeded, t0, time.Time{}))
	failed := workflowOf("done", "u-done", wfv1.WorkflowFailed, nodeOf("open", wfv1.NodeTypePod, wfv1.NodeRunning, t0, time.Time{}))
	failed.Status.FinishedAt = metav1.NewTime(t0.Add(5 * time.Minute))
	in := &cluster{
		workflows:   []inspect.Workflow{{WF: running}, {WF: failed}},
		undecodable: []inspect.Undecodable{{Namespace: "ns", Name: "bad", UID: "u-bad", Err: errors.New("no")}},
		pods: []*corev1.Pod{
			podOf("free", "gone", "u-gone", "x", t0),
			holding(podOf("orphan", "", "", "x", t0)),
			holding(deleting(podOf("terminating", "gone", "u-gone", "x", t0), t0.Add(10*time.Minute))),
			holding(podOf("young-orphan", "gone", "u-gone", "x", young)),
			holding(podOf("undecodable", "bad", "u-bad", "x", t0)),
			holding(podOf("final", "run", "u-run", "final", t0)),
			holding(podOf("busy", "run", "u-run", "busy", t0)),
			holding(podOf("just-final", "run", "u-run", "just-final", t0)),
			holding(podOf("never-finished", "run", "u-run", "never-finished", t0)),
			holding(podOf("open", "done", "u-done", "open", t0)),
		},
	}
	const held = "workflows.argoproj.io/status"
	want := []Finding{
		{Namespace: "ns", Object: "pod/orphan", Message: "holds " + held + " but no Workflow owns it", Since: t0,
			Repair: &Repair{Kind: RepairReleaseFinalizer, Namespace: "ns", Name: "orphan", UID: "pod-orphan"}},
		{Namespace: "ns", Workflow: "gone", Object: "pod/terminating", Since: t0.Add(10 * time.Minute),
			Message: "holds " + held + " but its workflow gone (uid u-gone) is gone; it is stuck Terminating",
			Repair:  &Repair{Kind: RepairReleaseFinalizer, Namespace: "ns", Name: "terminating", UID: "pod-terminating", Workflow: "gone", WorkflowUID: "u-gone"}},
		{Namespace: "ns", Workflow: "run", Object: "pod/final", Since: t0.Add(time.Minute),
			Message: "holds " + held + " although its node final is final (Succeeded); the controller releases it after persisting the node: is it running, and may it patch pods?"},
		{Namespace: "ns", Workflow: "done", Object: "pod/open", Since: t0.Add(5 * time.Minute),
			Message: "holds " + held + " although its workflow Failed; the controller releases it after persisting the node: is it running, and may it patch pods?"},
	}
	res := heldFinalizers(context.Background(), nil, in, o)
	if len(res.Skipped) != 0 || !reflect.DeepEqual(res.Findings, want) {
		t.Errorf("skipped %q, findings:\n%s\nwant:\n%s", res.Skipped, findingsText(res.Findings), findingsText(want))
	}

	in.podsErr = errors.New("pods: forbidden")
	if res := heldFinalizers(context.Background(), nil, in, o); len(res.Findings) != 0 || !reflect.DeepEqual(res.Skipped, []string{"pods: forbidden"}) {
		t.Errorf("without pods: findings %v, skipped %q; want only the read that failed", res.Findings, res.Skipped)
	}
}

// Pins what not-reconciled finds, word for word and in order: one workflow per signal, the earliest of
// several named with how many more, and what it skips.
func TestNotReconciledNamesTheEarliestSignalNoControllerReactedTo(t *testing.T) {
	o := checkOptions()
	suspendFor := func(wf *wfv1.Workflow, d string) *wfv1.Workflow {
		wf.Spec.Templates = []wfv1.Template{{Name: "wait", Suspend: &wfv1.SuspendTemplate{Duration: d}}}
		return wf
	}
	sleeping := func(id string, started time.Time) wfv1.NodeStatus {
		n := nodeOf(id, wfv1.NodeTypeSuspend, wfv1.NodeRunning, started, time.Time{})
		n.TemplateName = "wait"
		return n
	}
	unpicked := workflowOf("unpicked", "u-1", "")
	waits := workflowOf("waits", "u-2", wfv1.WorkflowRunning, nodeOf("w", wfv1.NodeTypePod, wfv1.NodeRunning, t0, time.Time{}))
	endedWF := workflowOf("ended", "u-3", wfv1.WorkflowRunning, nodeOf("e", wfv1.NodeTypePod, wfv1.NodeRunning, t0, time.Time{}))
	slept := suspendFor(workflowOf("slept", "u-4", wfv1.WorkflowRunning, sleeping("s", t0.Add(3*time.Minute))), "10m")
	late := suspendFor(workflowOf("late", "u-5", wfv1.WorkflowRunning, sleeping("s", t0.Add(2*time.Minute))), "10m")
	late.Spec.ActiveDeadlineSeconds = ptr(int64(1800))
	late.Status.StartedAt = metav1.NewTime(t0)
	quiet := suspendFor(workflowOf("quiet", "u-6", wfv1.WorkflowRunning, sleeping("s", t0.Add(55*time.Minute)),
		nodeOf("p", wfv1.NodeTypePod, wfv1.NodeRunning, t0, time.Time{})), "10m")
	done := workflowOf("done", "u-7", wfv1.WorkflowSucceeded)
	in := &cluster{
		workflows: []inspect.Workflow{{WF: unpicked, LastWrite: t0.Add(30 * time.Minute)},
			{WF: waits, Ext: extstatus.Extensions{ResultWaits: map[string]metav1.Time{"w": metav1.NewTime(t0.Add(5 * time.Minute))}}},
			{WF: endedWF}, {WF: slept}, {WF: late}, {WF: quiet}, {WF: done}},
		undecodable: []inspect.Undecodable{{Namespace: "ns", Name: "bad", UID: "u-bad", Err: errors.New("no")}},
		pods: []*corev1.Pod{ended(podOf("ended-e", "ended", "u-3", "e", t0), corev1.PodFailed, t0.Add(2*time.Minute)),
			podOf("quiet-p", "quiet", "u-6", "p", t0)},
	}
	finding := func(wf, msg string, since time.Time) Finding {
		return Finding{Namespace: "ns", Workflow: wf, Object: "workflow/" + wf, Message: "no controller reaction: " + msg, Since: since}
	}
	want := []Finding{
		finding("unpicked", "no controller has picked it up (no status.phase); last written 30m0s ago", t0),
		finding("waits", "node w waits for its task result past the 2m0s timeout", t0.Add(7*time.Minute)),
		finding("ended", "pod ended-e failed but node e still says Running", t0.Add(2*time.Minute)),
		finding("slept", "suspend node s's duration 10m passed", t0.Add(13*time.Minute)),
		finding("late", "suspend node s's duration 10m passed (and 1 more)", t0.Add(12*time.Minute)),
	}
	res := notReconciled(context.Background(), nil, in, o)
	if wantSkipped := []string{"workflow ns/bad not checked: no"}; !reflect.DeepEqual(res.Skipped, wantSkipped) || !reflect.DeepEqual(res.Findings, want) {
		t.Errorf("skipped %q, findings:\n%s\nwant skipped %q, findings:\n%s", res.Skipped, findingsText(res.Findings), wantSkipped, findingsText(want))
	}

	in.podsErr = errors.New("pods: forbidden")
	res = notReconciled(context.Background(), nil, in, o)
	wantSkipped := []string{"workflow ns/bad not checked: no", "ended pods not compared with their nodes: pods: forbidden"}
	if want := append(want[:2:2], want[3:]...); !reflect.DeepEqual(res.Skipped, wantSkipped) || !reflect.DeepEqual(res.Findings, want) {
		t.Errorf("without pods: skipped %q, findings:\n%s\nwant skipped %q, findings:\n%s", res.Skipped, findingsText(res.Findings), wantSkipped, findingsText(want))
	}

	in.workflowsErr = errors.New("workflows: forbidden")
	if res := notReconciled(context.Background(), nil, in, o); len(res.Findings) != 0 || !reflect.DeepEqual(res.Skipped, []string{"workflows: forbidden"}) {
		t.Errorf("without workflows: findings %v, skipped %q; want only the read that failed", res.Findings, res.Skipped)
	}
}

func ptr[T any](v T) *T { return &v }

func findingsText(fs []Finding) string {
	var s string
	for _, f := range fs {
		s += "  " + f.Namespace + " " + f.Workflow + " " + f.Object + " since " + f.Since.Format(time.RFC3339) + ": " + f.Message
		if f.Repair != nil {
			s += " [repair " + f.Repair.Describe() + " uid " + string(f.Repair.UID) + "]"
		}
		s += "\n"
	}
	return s
}
