package actions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/admissionpolicy"
	"github.com/wfguard/wfguard/extstatus"
)

// treeNode builds a node: id, name, type, phase, boundary, children.
func treeNode(id, name string, typ wfv1.NodeType, phase wfv1.NodePhase, boundary string, children ...string) wfv1.NodeStatus {
	return wfv1.NodeStatus{ID: id, Name: name, DisplayName: name[strings.LastIndex(name, ".")+1:], TemplateName: name[strings.LastIndex(name, ".")+1:],
		Type: typ, Phase: phase, BoundaryID: boundary, Children: children,
		StartedAt: metav1.NewTime(time.Unix(100, 0)), FinishedAt: metav1.NewTime(time.Unix(200, 0))}
}

func completedWorkflow(phase wfv1.WorkflowPhase, nodes ...wfv1.NodeStatus) *wfv1.Workflow {
	wf := &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", UID: "wf-uid",
			Labels: map[string]string{common.LabelKeyCompleted: "true", common.LabelKeyPhase: string(phase)}},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "x", Value: wfv1.AnyStringPtr("1")}}}},
		Status: wfv1.WorkflowStatus{Phase: phase, Message: "child failed", Nodes: wfv1.Nodes{},
			StartedAt: metav1.NewTime(time.Unix(100, 0)), FinishedAt: metav1.NewTime(time.Unix(200, 0))},
	}
	for _, n := range nodes {
		wf.Status.Nodes[n.ID] = n
	}
	return wf
}

// stepsWorkflow: wf -> wf[0] -> wf[0].a (Succeeded) -> wf[1] -> wf[1].b (phase of b).
func stepsWorkflow(wfPhase wfv1.WorkflowPhase, b wfv1.NodePhase) *wfv1.Workflow {
	groupPhase := b
	return completedWorkflow(wfPhase,
		treeNode("wf", "wf", wfv1.NodeTypeSteps, wfv1.NodePhase(wfPhase), "", "g0"),
		treeNode("g0", "wf[0]", wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, "wf", "a"),
		treeNode("a", "wf[0].a", wfv1.NodeTypePod, wfv1.NodeSucceeded, "wf", "g1"),
		treeNode("g1", "wf[1]", wfv1.NodeTypeStepGroup, groupPhase, "wf", "b"),
		treeNode("b", "wf[1].b", wfv1.NodeTypePod, b, "wf"),
	)
}

func retryAction(p *v1alpha1.RetryParameters) *v1alpha1.WorkflowAction {
	return &v1alpha1.WorkflowAction{Spec: v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionRetry, Retry: p}}
}

func TestARetryRunsAgainWhatFailedAndKeepsWhatSucceeded(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	cases := []struct {
		name    string
		wf      *wfv1.Workflow
		params  *v1alpha1.RetryParameters
		removed []string // node IDs gone after the retry
		reset   []string // node IDs Running again
		kept    []string // node IDs unchanged
	}{
		{"a failed step runs again; the step before it keeps its success",
			stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed), nil,
			[]string{"b"}, []string{"wf", "g1"}, []string{"g0", "a"}},
		{"a retried step runs again as a whole: its Retry node and every attempt",
			completedWorkflow(wfv1.WorkflowFailed,
				treeNode("wf", "wf", wfv1.NodeTypeSteps, wfv1.NodeFailed, "", "g0"),
				treeNode("g0", "wf[0]", wfv1.NodeTypeStepGroup, wfv1.NodeFailed, "wf", "r"),
				treeNode("r", "wf[0].r", wfv1.NodeTypeRetry, wfv1.NodeFailed, "wf", "r0", "r1"),
				retried(treeNode("r0", "wf[0].r(0)", wfv1.NodeTypePod, wfv1.NodeFailed, "wf")),
				retried(treeNode("r1", "wf[0].r(1)", wfv1.NodeTypePod, wfv1.NodeFailed, "wf")),
			), nil,
			[]string{"r", "r0", "r1"}, []string{"wf", "g0"}, nil},
		{"a failed DAG task runs again with the tasks after it; a sibling keeps its success",
			completedWorkflow(wfv1.WorkflowFailed,
				treeNode("wf", "wf", wfv1.NodeTypeDAG, wfv1.NodeFailed, "", "A", "S"),
				treeNode("A", "wf.A", wfv1.NodeTypePod, wfv1.NodeFailed, "wf", "B"),
				treeNode("B", "wf.B", wfv1.NodeTypeSkipped, wfv1.NodeOmitted, "wf"),
				treeNode("S", "wf.S", wfv1.NodeTypePod, wfv1.NodeSucceeded, "wf"),
			), nil,
			[]string{"A", "B"}, []string{"wf"}, []string{"S"}},
		{"a failed containerSet container runs its whole pod again",
			completedWorkflow(wfv1.WorkflowFailed,
				treeNode("wf", "wf", wfv1.NodeTypeDAG, wfv1.NodeFailed, "", "P"),
				treeNode("P", "wf.P", wfv1.NodeTypePod, wfv1.NodeFailed, "wf", "c1", "c2"),
				treeNode("c1", "wf.P.c1", wfv1.NodeTypeContainer, wfv1.NodeSucceeded, "wf"),
				treeNode("c2", "wf.P.c2", wfv1.NodeTypeContainer, wfv1.NodeFailed, "wf"),
			), nil,
			[]string{"P", "c1", "c2"}, []string{"wf"}, nil},
		{"the exit handler runs again",
			withExitHandler(stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed)), nil,
			[]string{"b", "exit", "exitpod"}, []string{"wf", "g1"}, []string{"a"}},
		{"restartSuccessful runs the selected succeeded step again, with everything after it",
			stepsWorkflow(wfv1.WorkflowSucceeded, wfv1.NodeSucceeded),
			&v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "templateName=a"},
			[]string{"a", "g1", "b"}, []string{"wf", "g0"}, nil},
		{"a steps node nested in a DAG resets every boundary up to the root",
			completedWorkflow(wfv1.WorkflowFailed,
				treeNode("wf", "wf", wfv1.NodeTypeDAG, wfv1.NodeFailed, "", "T"),
				treeNode("T", "wf.T", wfv1.NodeTypeSteps, wfv1.NodeFailed, "wf", "T0"),
				treeNode("T0", "wf.T[0]", wfv1.NodeTypeStepGroup, wfv1.NodeFailed, "T", "x"),
				treeNode("x", "wf.T[0].x", wfv1.NodeTypePod, wfv1.NodeError, "T"),
			), nil,
			[]string{"x"}, []string{"wf", "T", "T0"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.wf.DeepCopy()
			ext := &extstatus.Extensions{Shutdown: wfv1.ShutdownStrategyTerminate, ResultWaits: map[string]metav1.Time{tc.removed[0]: now}}
			tc.wf.Spec.Shutdown = wfv1.ShutdownStrategyTerminate
			out := Apply(tc.wf, ext, retryAction(tc.params), now)
			if out.Phase != v1alpha1.PhaseSucceeded || out.Reason != ReasonApplied {
				t.Fatalf("outcome = %+v, want Succeeded Applied", out)
			}
			for _, id := range tc.removed {
				if _, ok := tc.wf.Status.Nodes[id]; ok {
					t.Errorf("node %s is still there; a retry removes it to run it again", id)
				}
				if _, ok := ext.ResultWaits[id]; ok {
					t.Errorf("the result wait of removed node %s is still recorded", id)
				}
			}
			for _, id := range tc.reset {
				n, ok := tc.wf.Status.Nodes[id]
				if !ok || n.Phase != wfv1.NodeRunning || n.Message != "" || !n.FinishedAt.IsZero() || !n.StartedAt.Equal(&now) {
					t.Errorf("node %s = %+v, want Running again, no message, started now, not finished", id, n)
				}
				for _, c := range append(slices.Clone(n.Children), n.OutboundNodes...) {
					if slices.Contains(tc.removed, c) {
						t.Errorf("node %s still links to removed node %s", id, c)
					}
				}
			}
			for _, id := range tc.kept {
				if got, want := tc.wf.Status.Nodes[id], before.Status.Nodes[id]; got.Phase != want.Phase || !got.FinishedAt.Equal(&want.FinishedAt) {
					t.Errorf("node %s = %s finished %v, want it kept as %s finished %v", id, got.Phase, got.FinishedAt, want.Phase, want.FinishedAt)
				}
			}
			if got := len(tc.wf.Status.Nodes); got != len(before.Status.Nodes)-len(tc.removed) {
				t.Errorf("%d nodes left, want %d", got, len(before.Status.Nodes)-len(tc.removed))
			}
			wf := tc.wf
			if wf.Status.Phase != wfv1.WorkflowPending || wf.Status.Message != "" || !wf.Status.FinishedAt.IsZero() ||
				wf.Labels[common.LabelKeyCompleted] != "false" || wf.Labels[common.LabelKeyPhase] != "Pending" {
				t.Errorf("workflow = %s %q finished %v labels %v, want Pending, no message, not finished, completed=false", wf.Status.Phase, wf.Status.Message, wf.Status.FinishedAt, wf.Labels)
			}
			if ext.RetryCleanupSince == nil || !ext.RetryCleanupSince.Equal(&now) {
				t.Errorf("retryCleanupSince = %v, want %v: no node may run before the previous run's pods are gone", ext.RetryCleanupSince, now)
			}
			if ext.Shutdown != "" || wf.Spec.Shutdown != "" {
				t.Errorf("shutdown = %q / spec %q, want cleared: the retried run is not terminated", ext.Shutdown, wf.Spec.Shutdown)
			}
		})
	}
}

func retried(n wfv1.NodeStatus) wfv1.NodeStatus {
	n.NodeFlag = &wfv1.NodeFlag{Retried: true}
	return n
}

func withExitHandler(wf *wfv1.Workflow) *wfv1.Workflow {
	wf.Status.Nodes["exit"] = treeNode("exit", "wf.onExit", wfv1.NodeTypeSteps, wfv1.NodeSucceeded, "", "exitpod")
	wf.Status.Nodes["exitpod"] = treeNode("exitpod", "wf.onExit[0].notify", wfv1.NodeTypePod, wfv1.NodeSucceeded, "exit")
	return wf
}

func TestARetryThatCannotApplyIsRefusedAndChangesNothing(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	running := stepsWorkflow(wfv1.WorkflowRunning, wfv1.NodeRunning)
	running.Labels[common.LabelKeyCompleted] = "false"
	continued := stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeSucceeded)
	a := continued.Status.Nodes["a"]
	a.Phase = wfv1.NodeFailed // failed, but continued on: b after it succeeded
	continued.Status.Nodes["a"] = a
	dangling := stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed)
	root := dangling.Status.Nodes["wf"]
	root.Children = append(root.Children, "ghost")
	dangling.Status.Nodes["wf"] = root
	cases := []struct {
		name   string
		wf     *wfv1.Workflow
		params *v1alpha1.RetryParameters
		reason string
		quote  string
	}{
		{"a running workflow", running, nil, ReasonWorkflowNotCompleted, "only a completed workflow"},
		{"a succeeded workflow without restartSuccessful", stepsWorkflow(wfv1.WorkflowSucceeded, wfv1.NodeSucceeded), nil, ReasonNothingToRetry, "restartSuccessful"},
		{"a workflow rejected at start (no nodes)", completedWorkflow(wfv1.WorkflowFailed), nil, ReasonNothingToRetry, "never started"},
		{"a failed step that was continued on, with success after it", continued, nil, ReasonNothingToRetry, "no failed node"},
		{"a selector without restartSuccessful", stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed),
			&v1alpha1.RetryParameters{NodeFieldSelector: "templateName=a"}, ReasonInvalidNodeFieldSelector, "go together"},
		{"an unparsable selector", stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed),
			&v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "templateName"}, ReasonInvalidNodeFieldSelector, "templateName"},
		{"a parameter that is not NAME=VALUE", stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed),
			&v1alpha1.RetryParameters{Parameters: []string{"x"}}, ReasonInvalidParameter, "not NAME=VALUE"},
		{"a parameter the workflow does not declare", stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed),
			&v1alpha1.RetryParameters{Parameters: []string{"y=2"}}, ReasonInvalidParameter, `no argument parameter "y"`},
		{"more parameters than the bound", stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed),
			&v1alpha1.RetryParameters{Parameters: slices.Repeat([]string{"x=1"}, MaxRetryParameters+1)}, ReasonInvalidParameter, "limit of 64"},
		{"a node tree naming a child that is not there", dangling, nil, ReasonInvalidNodeTree, "ghost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.wf.DeepCopy()
			ext := &extstatus.Extensions{}
			out := Apply(tc.wf, ext, retryAction(tc.params), now)
			if out.Phase != v1alpha1.PhaseFailed || out.Reason != tc.reason || !strings.Contains(out.Message, tc.quote) {
				t.Errorf("outcome = %+v, want Failed %s mentioning %q", out, tc.reason, tc.quote)
			}
			if len(out.Message) > MaxMessageLength {
				t.Errorf("message of %d bytes, more than the bound %d", len(out.Message), MaxMessageLength)
			}
			if !equalWorkflows(before, tc.wf) || ext.RetryCleanupSince != nil {
				t.Errorf("a refused retry changed the workflow")
			}
		})
	}
}

func equalWorkflows(a, b *wfv1.Workflow) bool {
	x, _ := extstatus.ToUnstructured(a, extstatus.Extensions{})
	y, _ := extstatus.ToUnstructured(b, extstatus.Extensions{})
	xj, _ := x.MarshalJSON()
	yj, _ := y.MarshalJSON()
	return string(xj) == string(yj)
}

func TestARetryOverridesArgumentsWhereTheRunReadsThem(t *testing.T) {
	wf := stepsWorkflow(wfv1.WorkflowFailed, wfv1.NodeFailed)
	wf.Status.StoredWorkflowSpec = wf.Spec.DeepCopy() // a workflowTemplateRef's merged spec runs
	out := Apply(wf, &extstatus.Extensions{}, retryAction(&v1alpha1.RetryParameters{Parameters: []string{"x=two=2"}}), metav1.Now())
	if out.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("outcome = %+v, want Succeeded", out)
	}
	for where, params := range map[string][]wfv1.Parameter{"spec": wf.Spec.Arguments.Parameters, "stored spec": wf.Status.StoredWorkflowSpec.Arguments.Parameters} {
		if len(params) != 1 || params[0].Value.String() != "two=2" {
			t.Errorf("%s arguments = %+v, want x = %q (the first = splits NAME from VALUE)", where, params, "two=2")
		}
	}
}

func TestABoundaryCycleInARewrittenStatusEndsTheWalk(t *testing.T) {
	wf := completedWorkflow(wfv1.WorkflowFailed,
		treeNode("wf", "wf", wfv1.NodeTypeSteps, wfv1.NodeFailed, "", "g0"),
		treeNode("g0", "wf[0]", wfv1.NodeTypeStepGroup, wfv1.NodeFailed, "x", "x"),
		treeNode("x", "wf[0].x", wfv1.NodeTypePod, wfv1.NodeFailed, "g0"),
	)
	if out := Apply(wf, &extstatus.Extensions{}, retryAction(nil), metav1.Now()); out.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("outcome = %+v, want Succeeded (a cycle of boundaries is walked at most once per node)", out)
	}
}

func TestARetryThatRewritesItsWorkflowIsAppliedOnlyIfThePolicyCheckingItsCreatorAdmittedIt(t *testing.T) {
	settled := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	inForce := func(context.Context) (admissionpolicy.Verdict, error) {
		return admissionpolicy.Verdict{Policy: RetryOverridesPolicy, Since: settled}, nil
	}
	absent := func(context.Context) (admissionpolicy.Verdict, error) {
		return admissionpolicy.Verdict{Policy: RetryOverridesPolicy, NotInForce: "the ValidatingAdmissionPolicy is not installed"}, nil
	}
	unreadable := func(context.Context) (admissionpolicy.Verdict, error) {
		return admissionpolicy.Verdict{}, errors.New("etcd down")
	}
	later := settled.Add(time.Minute)
	for _, tc := range []struct {
		sentence string
		params   *v1alpha1.RetryParameters
		created  time.Time
		policy   func(context.Context) (admissionpolicy.Verdict, error)
		refused  string // in the outcome's message; "" when the Retry may be applied
		err      bool
	}{
		{"a plain Retry needs no policy", nil, later, nil, "", false},
		{"a Retry with an empty retry block needs no policy", &v1alpha1.RetryParameters{}, later, absent, "", false},
		{"a Retry with parameters is refused when nothing checks the policy", &v1alpha1.RetryParameters{Parameters: []string{"x=2"}}, later, nil,
			"no check of the admission policy", false},
		{"a Retry with parameters is refused without the policy", &v1alpha1.RetryParameters{Parameters: []string{"x=2"}}, later, absent,
			"is not installed", false},
		{"a restartSuccessful Retry is refused without the policy", &v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "name=a"}, later, absent,
			"is not installed", false},
		{"a Retry with only a selector is refused without the policy", &v1alpha1.RetryParameters{NodeFieldSelector: "name=a"}, later, absent,
			"is not installed", false},
		{"a Retry with parameters created before the policy settled is refused", &v1alpha1.RetryParameters{Parameters: []string{"x=2"}},
			settled.Add(admissionpolicy.SettleTime - time.Second), inForce, "were surely in force", false},
		{"a Retry with parameters created once the policy settled may be applied", &v1alpha1.RetryParameters{Parameters: []string{"x=2"}},
			settled.Add(admissionpolicy.SettleTime), inForce, "", false},
		{"a policy that cannot be read decides nothing", &v1alpha1.RetryParameters{Parameters: []string{"x=2"}}, later, unreadable, "", true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := retryAction(tc.params)
			a.Spec.WorkflowRef.Name = "wf"
			a.CreationTimestamp = metav1.NewTime(tc.created)
			d := &Drainer{RetryPolicy: tc.policy}
			out, err := d.authorizeRewrite(context.Background(), a)
			switch {
			case tc.err:
				if err == nil || out.Phase != "" {
					t.Fatalf("outcome %+v, error %v; want an error and no outcome", out, err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.refused == "" && out.Phase != "":
				t.Errorf("refused: %s %q", out.Reason, out.Message)
			case tc.refused != "" && (out.Reason != ReasonRetryOverridesNotAuthorized || !strings.Contains(out.Message, tc.refused)):
				t.Errorf("outcome %s %q, want %s ...%q", out.Reason, out.Message, ReasonRetryOverridesNotAuthorized, tc.refused)
			}
		})
	}
}
