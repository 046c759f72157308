package taskresult

import (
	"context"
	"errors"
	"fmt"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/internal/fanout"
)

// ReasonDeleteFailed is the Warning Event of a completed workflow whose task results could not be deleted;
// the deletion is tried again.
const ReasonDeleteFailed = "TaskResultsDeleteFailed"

// deleteParallelism bounds one workflow's concurrent deletions of single results (see Completed).
const deleteParallelism = 8

// Remover deletes the task results a workflow has no more use for, as argo does (argo-facts §1.3): a
// completed workflow's (Completed), and a node's stale one before the node runs again (Delete). It only
// ever deletes results the workflow owns (namespace, owner UID, workflow label), so a result of another
// workflow, or one a pod forged under another owner, is never touched.
type Remover struct {
	Client versioned.Interface
	// InstanceSelector is the label requirement of this controller's instance ID, as the result informer
	// selects ("!workflows.argoproj.io/controller-instanceid" without one).
	InstanceSelector string

	mu sync.Mutex
	// asked maps a workflow key to the results whose deletion Completed asked for: until they leave the
	// cache they are not asked for again.
	asked map[string]map[types.UID]bool
}

// Completed deletes the results of the completed workflow wf that wf owns, from cached (the cache's results
// labelled with wf's name). When cached holds only wf's own results it makes argo's one call, a
// DeleteCollection by the workflow's name label (and the instance's); otherwise it deletes each owned one
// with its UID as precondition. Results it already asked to delete are not asked again until they leave
// the cache; what the cache never held is left for the garbage collector (owner reference) and for Delete.
// It returns how many results it asked to delete.
func (r *Remover) Completed(ctx context.Context, key string, wf *wfv1.Workflow, cached []*wfv1.WorkflowTaskResult) (int, error) {
	var owned []*wfv1.WorkflowTaskResult
	onlyOwned := true
	for _, res := range cached {
		if ownedResult(wf, res) {
			owned = append(owned, res)
		} else {
			onlyOwned = false
		}
	}
	todo := r.notAsked(key, owned)
	if len(todo) == 0 {
		return 0, nil
	}
	var err error
	if onlyOwned {
		err = r.deleteCollection(ctx, wf)
	} else {
		err = errors.Join(fanout.Each(ctx, deleteParallelism, len(todo), func(i int) error { return r.Delete(ctx, todo[i]) })...)
	}
	if err != nil {
		return 0, err
	}
	r.remember(key, todo)
	return len(todo), nil
}

// deleteCollection is argo's call: every result labelled with wf's name (and this instance's label), in
// the background. The caller checked that the cache holds no other workflow's result under that label.
func (r *Remover) deleteCollection(ctx context.Context, wf *wfv1.Workflow) error {
	background := metav1.DeletePropagationBackground
	selector := common.LabelKeyWorkflow + "=" + wf.Name
	if r.InstanceSelector != "" {
		selector += "," + r.InstanceSelector
	}
	err := r.Client.ArgoprojV1alpha1().WorkflowTaskResults(wf.Namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("deleting the task results of completed workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	return nil
}

// Delete deletes one result if it is still the one given (its UID); a result already gone, or replaced by
// another object of its name, is success.
func (r *Remover) Delete(ctx context.Context, res *wfv1.WorkflowTaskResult) error {
	err := r.Client.ArgoprojV1alpha1().WorkflowTaskResults(res.Namespace).Delete(ctx, res.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &res.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting task result %s/%s: %w", res.Namespace, res.Name, err)
	}
	return nil
}

// notAsked is owned without the results Completed already asked to delete for key; it forgets those that
// left the cache.
func (r *Remover) notAsked(key string, owned []*wfv1.WorkflowTaskResult) []*wfv1.WorkflowTaskResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	asked := r.asked[key]
	var todo []*wfv1.WorkflowTaskResult
	still := map[types.UID]bool{}
	for _, res := range owned {
		if asked[res.UID] {
			still[res.UID] = true
		} else {
			todo = append(todo, res)
		}
	}
	if len(still) == 0 {
		delete(r.asked, key)
	} else {
		r.asked[key] = still
	}
	return todo
}

func (r *Remover) remember(key string, asked []*wfv1.WorkflowTaskResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked == nil {
		r.asked = map[string]map[types.UID]bool{}
	}
	if r.asked[key] == nil {
		r.asked[key] = map[types.UID]bool{}
	}
	for _, res := range asked {
		r.asked[key][res.UID] = true
	}
}

// Forget drops what Completed remembers of key (the workflow is gone).
func (r *Remover) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.asked, key)
}

// ownedResult reports whether res is wf's own: in its namespace, labelled with its name, owned by its UID.
func ownedResult(wf *wfv1.Workflow, res *wfv1.WorkflowTaskResult) bool {
	return res.Namespace == wf.Namespace && res.Labels[common.LabelKeyWorkflow] == wf.Name && OwnedBy(res, wf)
}

// Stale returns, by node ID, the results in cached that wf owns and that no pod of its current run wrote:
// no pod of the node is cached (pods, by node ID) and the result was created no later than the workflow
// (re)started (status.startedAt, which argo's retry sets to the time of the retry). Such a result is a
// previous run's: one left by a workflow completed before wfguard deleted results at completion, or by a
// crash between the completion and that deletion. Before its node's pod is created again the result must
// go (Delete): the new executor would otherwise patch it, and Merge ignores a result created before its pod
// (IgnoredPredatesPod), so the node would wait for a result that never comes.
func Stale(wf *wfv1.Workflow, cached []*wfv1.WorkflowTaskResult, pods map[string]*corev1.Pod) map[string]*wfv1.WorkflowTaskResult {
	var out map[string]*wfv1.WorkflowTaskResult
	for _, res := range cached {
		if !ownedResult(wf, res) || pods[res.Name] != nil || res.CreationTimestamp.After(wf.Status.StartedAt.Time) {
			continue
		}
		if out == nil {
			out = map[string]*wfv1.WorkflowTaskResult{}
		}
		out[res.Name] = res
	}
	return out
}
