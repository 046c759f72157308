package bench

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

const howRaw = "raw client: WorkflowAction create, workflow spec.suspend patch, action status update → outcome seen on a watch"

// actionsRaw is the control plane's floor for the same bursts: with no controller, a raw client does per
// request the three writes the action contract needs at the least (create the WorkflowAction, change the
// workflow, write the action's outcome), all requests of a kind at once, and returns after the last.
func (e *env) actionsRaw(ctx context.Context) (*ActionsResult, error) {
	obs, err := e.observedNamespace(ctx, "bench-actions-raw")
	if err != nil {
		return nil, err
	}
	ns := obs.namespace
	defer obs.close()
	client, err := v1alpha1.NewForConfig(e.config)
	if err != nil {
		return nil, err
	}
	var wfs []*wfv1.Workflow
	for i := range e.opts.Actions {
		wfs = append(wfs, chainWorkflow(fmt.Sprintf("held-%03d", i), 1))
	}
	if err := createAll(ctx, e.argo, ns, wfs); err != nil {
		return nil, err
	}
	res := &ActionsResult{Concurrent: e.opts.Actions, How: howRaw}
	terminal, stopWatch, err := watchTerminal(ctx, client.Namespace(ns))
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	send := rawActionRequester(e.argo, client.Namespace(ns), ns, terminal)
	if err := res.measureBursts(ctx, obs, send, wfs); err != nil {
		return nil, fmt.Errorf("raw client: %w", err)
	}
	return res, nil
}

// rawActionRequester does one request's three writes in order, as the controller's pass would have them,
// and returns when the bench's watch sees the outcome, as wfguard's requester does (`wfguard action` waits
// on a watch).
func rawActionRequester(argo versioned.Interface, actions *v1alpha1.NamespacedClient, ns string, terminal *terminalTimes) requester {
	return func(ctx context.Context, workflow, kind string) (bool, error) {
		a, err := actions.Create(ctx, &v1alpha1.WorkflowAction{
			ObjectMeta: metav1.ObjectMeta{GenerateName: workflow + "-"},
			Spec:       v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: workflow}, Action: kind},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("creating %s action for %s: %w", kind, workflow, err)
		}
		patch := `{"spec":{"suspend":true}}`
		if kind == v1alpha1.ActionResume {
			patch = `{"spec":{"suspend":null}}`
		}
		if _, err := argo.ArgoprojV1alpha1().Workflows(ns).Patch(ctx, workflow, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return false, fmt.Errorf("patching workflow %s for %s: %w", workflow, kind, err)
		}
		now := metav1.Now()
		a.Status = v1alpha1.WorkflowActionStatus{Phase: v1alpha1.PhaseSucceeded, Reason: "Applied", CompletionTime: &now}
		if _, err := actions.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("writing the outcome of action %s: %w", a.Name, err)
		}
		if _, _, err := terminal.wait(ctx, a.Name); err != nil {
			return false, fmt.Errorf("waiting to see the outcome of action %s: %w", a.Name, err)
		}
		return false, nil
	}
}
