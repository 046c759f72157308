package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/explain"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/taskresult"
)

// partialSuccess finds pod nodes that Succeeded without the outputs their template declares.
func partialSuccess(_ context.Context, _ *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.workflowsErr)}
	if in.workflowsErr != nil {
		return res
	}
	res.Skipped = append(res.Skipped, undecodable(in)...)
	results := indexResults(in.results)
	for _, w := range in.workflows {
		wf := w.WF
		for _, id := range nodeIDs(wf) {
			n := wf.Status.Nodes[id]
			if n.Type != wfv1.NodeTypePod || n.Phase != wfv1.NodeSucceeded {
				continue
			}
			missing := explain.MissingOutputs(explain.Template(wf, &n), n.Outputs)
			if len(missing) == 0 {
				continue
			}
			msg := "Succeeded without declared outputs: " + strings.Join(missing, ", ")
			if in.resultsErr == nil {
				msg += "; its task result is " + explain.ResultState(wf, results.of(wf, id))
			}
			res.Findings = append(res.Findings, Finding{Namespace: wf.Namespace, Workflow: wf.Name, Object: nodeObject(&n),
				Message: msg, Since: n.FinishedAt.Time})
		}
	}
	if in.resultsErr != nil {
		res.Skipped = append(res.Skipped, "task-result states not shown: "+in.resultsErr.Error())
	}
	return res
}

// incompleteResults finds nodes still waiting on a result that nothing will finalize any more: their
// pod ended (the wait container is done) or is gone. Only the second is repaired.
func incompleteResults(_ context.Context, _ *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.podsErr, in.resultsErr, in.workflowsErr)}
	if len(res.Skipped) > 0 {
		return res
	}
	res.Skipped = append(res.Skipped, undecodable(in)...)
	results := indexResults(in.results)
	pods := podsByOwner(in.pods)
	for _, w := range in.workflows {
		wf := w.WF
		if completed(wf) {
			continue // never reconciled again: its results no longer gate anything
		}
		byNode := explain.PodsByNode(wf, pods[wf.UID])
		for _, id := range nodeIDs(wf) {
			n := wf.Status.Nodes[id]
			if n.Type != wfv1.NodeTypePod || fulfilled(&n) {
				continue
			}
			r := results.of(wf, id)
			state := explain.ResultState(wf, r)
			if state == explain.ResultComplete {
				continue // complete on the server; merging it is the controller's next pass
			}
			pod := byNode[id]
			switch {
			case pod != nil && taskresult.PodEnded(pod):
				end := inspect.PodEnd(pod)
				if o.Now.Sub(end) < o.MinAge {
					continue
				}
				res.Findings = append(res.Findings, Finding{Namespace: wf.Namespace, Workflow: wf.Name, Object: nodeObject(&n), Since: end,
					Message: fmt.Sprintf("pod %s %s but its task result is %s; the node (%s) waits for it", pod.Name,
						strings.ToLower(string(pod.Status.Phase)), state, n.Phase)})
			case pod == nil && (state == explain.ResultPlaceholder || state == explain.ResultIncomplete):
				since := n.StartedAt.Time
				if o.Now.Sub(since) < o.MinAge {
					continue
				}
				res.Findings = append(res.Findings, Finding{Namespace: wf.Namespace, Workflow: wf.Name, Object: nodeObject(&n), Since: since,
					Message: fmt.Sprintf("its pod is gone and its task result %s is %s; no executor will finalize it", r.Name, state),
					Repair: &Repair{Kind: RepairFinalizeResult, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
						Workflow: wf.Name, WorkflowUID: wf.UID, NodeID: id}})
			}
		}
	}
	return res
}

// heldFinalizers finds pods that still hold the status finalizer although nothing more will be
// captured from them: their node is final, their workflow completed, or their workflow is gone (by UID).
// Only the last is repaired: the first two are the controller's to release after its own persist.
func heldFinalizers(_ context.Context, _ *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.podsErr, in.workflowsErr)}
	if len(res.Skipped) > 0 {
		return res
	}
	byUID, exists := workflowsByUID(in)
	for _, pod := range in.pods {
		if !inspect.HoldsFinalizer(pod) {
			continue
		}
		owner := types.UID(inspect.OwnerUID(pod))
		wf := byUID[owner]
		var f Finding
		var found bool
		switch {
		case owner == "" || !exists[owner]:
			f, found = heldForAGoneWorkflow(pod, owner, o)
		case wf == nil:
			continue // its workflow exists but does not decode: nothing to say about its node
		default:
			f, found = heldPastItsNode(pod, wf, o)
		}
		if found {
			res.Findings = append(res.Findings, f)
		}
	}
	return res
}

// workflowsByUID indexes the decoded workflows by UID; exists also holds those that do not decode.
func workflowsByUID(in *cluster) (map[types.UID]*wfv1.Workflow, map[types.UID]bool) {
	byUID := map[types.UID]*wfv1.Workflow{}
	for _, w := range in.workflows {
		byUID[w.WF.UID] = w.WF
	}
	exists := map[types.UID]bool{}
	for uid := range byUID {
		exists[uid] = true
	}
	for _, u := range in.undecodable {
		exists[u.UID] = true
	}
	return byUID, exists
}

// heldForAGoneWorkflow is the repairable finding of a pod holding the finalizer whose workflow (owner; ""
// when none owns it) is gone, once that is older than MinAge.
func heldForAGoneWorkflow(pod *corev1.Pod, owner types.UID, o Options) (Finding, bool) {
	since := pod.CreationTimestamp.Time
	if pod.DeletionTimestamp != nil {
		since = pod.DeletionTimestamp.Time
	}
	if o.Now.Sub(since) < o.MinAge {
		return Finding{}, false
	}
	msg := fmt.Sprintf("holds %s but its workflow %s (uid %s) is gone", common.FinalizerPodStatus, pod.Labels[common.LabelKeyWorkflow], owner)
	if owner == "" {
		msg = fmt.Sprintf("holds %s but no Workflow owns it", common.FinalizerPodStatus)
	}
	if pod.DeletionTimestamp != nil {
		msg += "; it is stuck Terminating"
	}
	return Finding{Namespace: pod.Namespace, Workflow: pod.Labels[common.LabelKeyWorkflow], Object: "pod/" + pod.Name,
		Message: msg, Since: since, Repair: &Repair{Kind: RepairReleaseFinalizer, Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Workflow: pod.Labels[common.LabelKeyWorkflow], WorkflowUID: owner}}, true
}

// heldPastItsNode is the finding of a pod of wf still holding the finalizer longer than MinAge after its
// node became final or wf completed: the controller's to release.
func heldPastItsNode(pod *corev1.Pod, wf *wfv1.Workflow, o Options) (Finding, bool) {
	var since time.Time
	var why string
	n, ok := wf.Status.Nodes[inspect.NodeID(pod)]
	switch {
	case ok && fulfilled(&n):
		since, why = n.FinishedAt.Time, fmt.Sprintf("its node %s is final (%s)", n.DisplayName, n.Phase)
	case wf.Status.Phase.Completed():
		since, why = wf.Status.FinishedAt.Time, fmt.Sprintf("its workflow %s", wf.Status.Phase)
	default:
		return Finding{}, false
	}
	if since.IsZero() || o.Now.Sub(since) < o.MinAge {
		return Finding{}, false
	}
	return Finding{Namespace: pod.Namespace, Workflow: wf.Name, Object: "pod/" + pod.Name, Since: since,
		Message: fmt.Sprintf("holds %s although %s; the controller releases it after persisting the node: is it running, and may it patch pods?",
			common.FinalizerPodStatus, why)}, true
}

// staleActions finds WorkflowActions without an outcome after the threshold.
func staleActions(_ context.Context, _ *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.actionsErr)}
	if in.actionsErr != nil {
		return res
	}
	byKey := map[string]inspect.Workflow{}
	for _, w := range in.workflows {
		byKey[w.Key()] = w
	}
	for _, a := range in.actions {
		if a.Status.Terminal() || o.Now.Sub(a.CreationTimestamp.Time) < o.ActionPendingAfter {
			continue
		}
		msg := fmt.Sprintf("%s has no outcome after %s", a.Spec.Action, o.Now.Sub(a.CreationTimestamp.Time).Round(time.Second))
		if in.workflowsErr == nil {
			w, ok := byKey[a.Namespace+"/"+a.Spec.WorkflowRef.Name]
			switch {
			case !ok:
				msg += "; the workflow does not exist (a running controller fails it WorkflowNotFound)"
			case recorded(w.Ext, a.UID):
				msg += "; its effect is recorded in status.appliedActions, only its outcome is unwritten"
			default:
				msg += "; no controller has applied it"
			}
		}
		res.Findings = append(res.Findings, Finding{Namespace: a.Namespace, Workflow: a.Spec.WorkflowRef.Name, Object: "workflowaction/" + a.Name,
			Message: msg, Since: a.CreationTimestamp.Time})
	}
	return res
}

func recorded(ext extstatus.Extensions, uid types.UID) bool {
	for _, r := range ext.AppliedActions {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// signal is something a controller should have reacted to at a time.
type signal struct {
	at   time.Time
	what string
}

// notReconciled finds workflows whose controller has not reacted, for longer than the threshold, to
// something that needs a reaction. A workflow whose pods simply run long is not flagged: it needs no
// write. The signals, all read from the API server:
//   - no status.phase since creation (no controller picked it up; argo's own healthz uses this);
//   - a pod ended, while its node shows neither a final phase nor the wait for its task result;
//   - a node still waits for its task result past wfguard's timeout;
//   - a suspend node's duration passed;
//   - the workflow's activeDeadlineSeconds passed.
func notReconciled(_ context.Context, _ *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.workflowsErr)}
	if in.workflowsErr != nil {
		return res
	}
	res.Skipped = append(res.Skipped, undecodable(in)...)
	if in.podsErr != nil {
		res.Skipped = append(res.Skipped, "ended pods not compared with their nodes: "+in.podsErr.Error())
	}
	pods := podsByOwner(in.pods)
	for _, w := range in.workflows {
		if completed(w.WF) {
			continue
		}
		signals := workflowSignals(w, pods[w.WF.UID], in.podsErr == nil, o)
		if f, ok := unreconciled(w, signals, o); ok {
			res.Findings = append(res.Findings, f)
		}
	}
	return res
}

// workflowSignals are the signals of a workflow and its nodes, whether due or not; its pods are compared
// with their nodes only when podsRead.
func workflowSignals(w inspect.Workflow, pods []*corev1.Pod, podsRead bool, o Options) []signal {
	wf := w.WF
	var signals []signal
	if wf.Status.Phase == "" {
		signals = append(signals, signal{wf.CreationTimestamp.Time, "no controller has picked it up (no status.phase)"})
	}
	byNode := explain.PodsByNode(wf, pods)
	timeout, _ := taskresult.TimeoutFor(wf, o.TaskResultTimeout)
	for _, id := range nodeIDs(wf) {
		n := wf.Status.Nodes[id]
		if s, ok := nodeSignal(&w, &n, byNode[id], podsRead, timeout); ok {
			signals = append(signals, s)
		}
	}
	if wf.Spec.ActiveDeadlineSeconds != nil && !wf.Status.StartedAt.IsZero() && wf.Status.Phase == wfv1.WorkflowRunning {
		d := wf.Status.StartedAt.Add(time.Duration(*wf.Spec.ActiveDeadlineSeconds) * time.Second)
		signals = append(signals, signal{d, "its activeDeadlineSeconds passed"})
	}
	return signals
}

// nodeSignal is the signal of a node of w, if it has one: its wait for its task result, its ended pod
// (nil when it has none or pods were not read), or its suspension's duration.
func nodeSignal(w *inspect.Workflow, n *wfv1.NodeStatus, pod *corev1.Pod, podsRead bool, timeout time.Duration) (signal, bool) {
	switch {
	case n.Type == wfv1.NodeTypePod && taskresult.Waiting(&w.Ext, n):
		since := taskresult.WaitStart(&w.Ext, n)
		if since.IsZero() {
			return signal{}, false
		}
		return signal{since.Add(timeout), fmt.Sprintf("node %s waits for its task result past the %s timeout", n.DisplayName, timeout)}, true
	case n.Type == wfv1.NodeTypePod && !n.Phase.Completed() && podsRead:
		if pod == nil || !taskresult.PodEnded(pod) {
			return signal{}, false
		}
		return signal{inspect.PodEnd(pod), fmt.Sprintf("pod %s %s but node %s still says %s",
			pod.Name, strings.ToLower(string(pod.Status.Phase)), n.DisplayName, n.Phase)}, true
	case n.Type == wfv1.NodeTypeSuspend && n.Phase == wfv1.NodeRunning:
		return suspendDurationSignal(w.WF, n)
	}
	return signal{}, false
}

// suspendDurationSignal is when a running suspend node's duration ends, if its template has one.
func suspendDurationSignal(wf *wfv1.Workflow, n *wfv1.NodeStatus) (signal, bool) {
	t := explain.Template(wf, n)
	if t == nil || t.Suspend == nil || t.Suspend.Duration == "" {
		return signal{}, false
	}
	d, err := wfv1.ParseStringToDuration(t.Suspend.Duration)
	if err != nil {
		return signal{}, false
	}
	return signal{n.StartedAt.Add(d), fmt.Sprintf("suspend node %s's duration %s passed", n.DisplayName, t.Suspend.Duration)}, true
}

// unreconciled is the finding of a workflow with signals due longer than UnreconciledAfter: the earliest
// named, the others counted.
func unreconciled(w inspect.Workflow, signals []signal, o Options) (Finding, bool) {
	var due []signal
	for _, s := range signals {
		if o.Now.Sub(s.at) >= o.UnreconciledAfter {
			due = append(due, s)
		}
	}
	if len(due) == 0 {
		return Finding{}, false
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	msg := "no controller reaction: " + due[0].what
	if len(due) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(due)-1)
	}
	if !w.LastWrite.IsZero() {
		msg += fmt.Sprintf("; last written %s", explain.Ago(o.Now, w.LastWrite))
	}
	wf := w.WF
	return Finding{Namespace: wf.Namespace, Workflow: wf.Name, Object: "workflow/" + wf.Name, Message: msg, Since: due[0].at}, true
}

// executorRBAC asks the API server, for the service account each unfinished workflow's pods report
// with, whether it may create and patch WorkflowTaskResults (what argoexec's wait container does).
func executorRBAC(ctx context.Context, c *inspect.Clients, in *cluster, o Options) CheckResult {
	res := CheckResult{Skipped: need(in.workflowsErr)}
	if in.workflowsErr != nil {
		return res
	}
	res.Skipped = append(res.Skipped, undecodable(in)...)
	type account struct{ ns, name string }
	users := map[account][]string{}
	for _, w := range in.workflows {
		if completed(w.WF) {
			continue
		}
		for _, sa := range executorAccounts(w.WF) {
			a := account{w.WF.Namespace, sa}
			users[a] = append(users[a], w.WF.Name)
		}
	}
	accounts := make([]account, 0, len(users))
	for a := range users {
		accounts = append(accounts, a)
	}
	sort.Slice(accounts, func(i, j int) bool {
		if accounts[i].ns != accounts[j].ns {
			return accounts[i].ns < accounts[j].ns
		}
		return accounts[i].name < accounts[j].name
	})
	for _, a := range accounts {
		var denied []string
		for _, verb := range []string{"create", "patch"} {
			sar := &authv1.SubjectAccessReview{Spec: authv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + a.ns + ":" + a.name,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.ns, "system:authenticated"},
				ResourceAttributes: &authv1.ResourceAttributes{Namespace: a.ns, Verb: verb, Group: wfv1.SchemeGroupVersion.Group,
					Resource: "workflowtaskresults"}}}
			out, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				res.Skipped = append(res.Skipped, (&inspect.ReadError{Verb: "create", Resource: "subjectaccessreviews", Cluster: true, Err: err}).Error())
				return res // the same error would repeat for every account
			}
			if !out.Status.Allowed {
				denied = append(denied, verb)
			}
		}
		if len(denied) == 0 {
			continue
		}
		names := users[a]
		sort.Strings(names)
		res.Findings = append(res.Findings, Finding{Namespace: a.ns, Object: "serviceaccount/" + a.name,
			Message: fmt.Sprintf("may not %s workflowtaskresults: its pods cannot report outputs (workflows: %s); bind the wfguard-executor ClusterRole (config/rbac/executor_role.yaml)",
				strings.Join(denied, ", "), strings.Join(names, ", "))})
	}
	return res
}

// executorAccounts are the service accounts a workflow's wait containers report with: the executor's
// account if set (template, then workflow), else the pod's (template, then workflow, then "default").
func executorAccounts(wf *wfv1.Workflow) []string {
	seen := map[string]bool{}
	var out []string
	for i := range wf.Spec.Templates {
		t := &wf.Spec.Templates[i]
		switch t.GetType() {
		case wfv1.TemplateTypeContainer, wfv1.TemplateTypeContainerSet, wfv1.TemplateTypeScript, wfv1.TemplateTypeResource, wfv1.TemplateTypeData:
		default:
			continue
		}
		sa := "default"
		switch {
		case t.Executor != nil && t.Executor.ServiceAccountName != "":
			sa = t.Executor.ServiceAccountName
		case wf.Spec.Executor != nil && wf.Spec.Executor.ServiceAccountName != "":
			sa = wf.Spec.Executor.ServiceAccountName
		case t.ServiceAccountName != "":
			sa = t.ServiceAccountName
		case wf.Spec.ServiceAccountName != "":
			sa = wf.Spec.ServiceAccountName
		}
		if !seen[sa] {
			seen[sa] = true
			out = append(out, sa)
		}
	}
	return out
}

// workflowCRD checks the installed Workflow CRD keeps wfguard's status fields (the controller's own
// start-up check).
func workflowCRD(ctx context.Context, c *inspect.Clients, _ *cluster, _ Options) CheckResult {
	var res CheckResult
	crd, err := inspect.WorkflowCRD(ctx, c)
	const obj = "customresourcedefinition/workflows.argoproj.io"
	switch {
	case apierrors.IsNotFound(err):
		res.Findings = append(res.Findings, Finding{Object: obj, Message: "the Workflow CRD is not installed: kubectl apply -k config/crd"})
	case err != nil:
		res.Skipped = append(res.Skipped, err.Error())
	default:
		if err := extstatus.CheckCRDPreserves(crd); err != nil {
			res.Findings = append(res.Findings, Finding{Object: obj, Message: err.Error()})
		}
	}
	return res
}

// results indexes task results by namespace and name (= node ID).
type results map[string][]*wfv1.WorkflowTaskResult

func indexResults(list []*wfv1.WorkflowTaskResult) results {
	out := results{}
	for _, r := range list {
		k := r.Namespace + "/" + r.Name
		out[k] = append(out[k], r)
	}
	return out
}

// of returns the workflow's own result of a node, else a foreign one of that name, else nil.
func (rs results) of(wf *wfv1.Workflow, nodeID string) *wfv1.WorkflowTaskResult {
	list := rs[wf.Namespace+"/"+nodeID]
	for _, r := range list {
		if inspect.OwnerUID(r) == string(wf.UID) {
			return r
		}
	}
	if len(list) > 0 {
		return list[0]
	}
	return nil
}

func podsByOwner(pods []*corev1.Pod) map[types.UID][]*corev1.Pod {
	out := map[types.UID][]*corev1.Pod{}
	for _, p := range pods {
		uid := types.UID(inspect.OwnerUID(p))
		out[uid] = append(out[uid], p)
	}
	return out
}

func nodeIDs(wf *wfv1.Workflow) []string {
	ids := make([]string, 0, len(wf.Status.Nodes))
	for id := range wf.Status.Nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func nodeObject(n *wfv1.NodeStatus) string { return fmt.Sprintf("node %s (%s)", n.Name, n.ID) }

// fulfilled is argo's rule: terminal with its result synced, or skipped/omitted.
func fulfilled(n *wfv1.NodeStatus) bool {
	return (n.Phase.Completed() && taskresult.Synced(n)) || n.Phase == wfv1.NodeSkipped || n.Phase == wfv1.NodeOmitted
}

// completed reports a workflow no controller reconciles any more.
func completed(wf *wfv1.Workflow) bool {
	return wf.Status.Phase.Completed() || wf.Labels[common.LabelKeyCompleted] == "true"
}
