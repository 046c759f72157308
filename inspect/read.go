package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/extstatus"
)

// pageSize bounds each list call, so a large cluster is read in pages rather than one huge response.
const pageSize = 500

var (
	workflowsResource = wfv1.SchemeGroupVersion.WithResource("workflows")
	crdResource       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// ReadError is a read that failed; its message is the one line a diagnostic prints for what it skipped.
type ReadError struct {
	Verb, Resource string
	// Namespace "" means all namespaces; Cluster marks cluster-scoped reads.
	Namespace string
	Cluster   bool
	Err       error
}

func (e *ReadError) Error() string {
	where := " in all namespaces"
	switch {
	case e.Cluster:
		where = ""
	case e.Namespace != "":
		where = " in namespace " + e.Namespace
	}
	return fmt.Sprintf("cannot %s %s%s: %s", e.Verb, e.Resource, where, Reason(e.Err))
}

func (e *ReadError) Unwrap() error { return e.Err }

// Reason says in a few words why an API call failed.
func Reason(err error) string {
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized (check the kubeconfig's credentials)"
	case apierrors.IsNotFound(err) && isListNotFound(err):
		return "the resource is not served (is its CRD installed? kubectl apply -k config/crd)"
	case apierrors.IsNotFound(err):
		return "not found"
	case errors.As(err, &netErr), strings.Contains(err.Error(), "connection refused"):
		return "API server unreachable: " + err.Error()
	}
	return err.Error()
}

// isListNotFound tells "this resource type does not exist" (a 404 without an object name) from a
// missing object.
func isListNotFound(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		d := status.Status().Details
		return d == nil || d.Name == ""
	}
	return false
}

func readErr(verb, resource, ns string, err error) error {
	return &ReadError{Verb: verb, Resource: resource, Namespace: ns, Err: err}
}

// Workflow is one decoded Workflow with wfguard's status extensions.
type Workflow struct {
	WF  *wfv1.Workflow
	Ext extstatus.Extensions
	// LastWrite is the latest write of any writer (the newest managedFields time); zero when unknown.
	LastWrite time.Time
}

// Key is namespace/name.
func (w Workflow) Key() string { return w.WF.Namespace + "/" + w.WF.Name }

func decode(u *unstructured.Unstructured) (Workflow, error) {
	wf, ext, err := extstatus.FromUnstructured(u)
	if err != nil {
		return Workflow{}, err
	}
	w := Workflow{WF: wf, Ext: ext}
	for _, mf := range u.GetManagedFields() {
		if mf.Time != nil && mf.Time.After(w.LastWrite) {
			w.LastWrite = mf.Time.Time
		}
	}
	return w, nil
}

// GetWorkflow reads one workflow.
func GetWorkflow(ctx context.Context, c *Clients, ns, name string) (Workflow, error) {
	u, err := c.Dynamic.Resource(workflowsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !isListNotFound(err) {
		return Workflow{}, fmt.Errorf("workflow %s/%s not found", ns, name)
	}
	if err != nil {
		return Workflow{}, &ReadError{Verb: "get", Resource: "workflow " + name, Namespace: ns, Err: err}
	}
	return decode(u)
}

// Undecodable is a Workflow object that does not decode into argo's types.
type Undecodable struct {
	Namespace, Name string
	UID             types.UID
	Err             error
}

// ListWorkflows lists workflows in ns ("" is all). Objects that do not decode are returned beside the
// rest, with their UIDs: they still exist, so their pods are not orphans.
func ListWorkflows(ctx context.Context, c *Clients, ns string) ([]Workflow, []Undecodable, error) {
	var out []Workflow
	var bad []Undecodable
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := c.Dynamic.Resource(workflowsResource).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, nil, readErr("list", "workflows", ns, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			w, err := decode(u)
			if err != nil {
				bad = append(bad, Undecodable{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), Err: err})
				continue
			}
			out = append(out, w)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, bad, nil
		}
	}
}

// ListPods lists the pods of workflows (label workflows.argoproj.io/workflow, any value or the given
// workflow name) in ns ("" is all).
func ListPods(ctx context.Context, c *Clients, ns, workflow string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	opts := metav1.ListOptions{LabelSelector: selector(workflow), Limit: pageSize}
	for {
		list, err := c.Kube.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, readErr("list", "pods", ns, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// ListResults lists WorkflowTaskResults (label workflows.argoproj.io/workflow, any value or the given
// workflow name) in ns ("" is all).
func ListResults(ctx context.Context, c *Clients, ns, workflow string) ([]*wfv1.WorkflowTaskResult, error) {
	var out []*wfv1.WorkflowTaskResult
	opts := metav1.ListOptions{LabelSelector: selector(workflow), Limit: pageSize}
	for {
		list, err := c.Argo.ArgoprojV1alpha1().WorkflowTaskResults(ns).List(ctx, opts)
		if err != nil {
			return nil, readErr("list", "workflowtaskresults", ns, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

func selector(workflow string) string {
	if workflow == "" {
		return common.LabelKeyWorkflow
	}
	return common.LabelKeyWorkflow + "=" + workflow
}

// ListActions lists WorkflowActions in ns ("" is all); with a workflow name, only those targeting it.
// Actions are matched by spec.workflowRef, not by label: kubectl-created ones carry none.
func ListActions(ctx context.Context, c *Clients, ns, workflow string) ([]*actionsv1.WorkflowAction, error) {
	list, err := c.Actions.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readErr("list", "workflowactions", ns, err)
	}
	var out []*actionsv1.WorkflowAction
	for i := range list.Items {
		if a := &list.Items[i]; workflow == "" || a.Spec.WorkflowRef.Name == workflow {
			out = append(out, a)
		}
	}
	return out, nil
}

// WorkflowCRD reads the installed Workflow CRD.
func WorkflowCRD(ctx context.Context, c *Clients) (*unstructured.Unstructured, error) {
	crd, err := c.Dynamic.Resource(crdResource).Get(ctx, "workflows.argoproj.io", metav1.GetOptions{})
	if err != nil {
		return nil, &ReadError{Verb: "get", Resource: "customresourcedefinition workflows.argoproj.io", Cluster: true, Err: err}
	}
	return crd, nil
}

// Snapshot is one workflow and the objects around it, read in one go.
type Snapshot struct {
	Workflow Workflow
	// Pods and Results carry the workflow's name label, whatever their owner: callers match by UID.
	Pods    []*corev1.Pod
	Results []*wfv1.WorkflowTaskResult
	// Actions target the workflow's name.
	Actions []*actionsv1.WorkflowAction
	// Skipped lists reads that failed; the snapshot lacks those objects.
	Skipped []string
}

// ReadSnapshot reads a workflow with its pods, task results and actions. Only a failure to read the
// workflow itself is an error; the other reads that fail are listed in Skipped.
func ReadSnapshot(ctx context.Context, c *Clients, ns, name string) (*Snapshot, error) {
	w, err := GetWorkflow(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Workflow: w}
	if s.Pods, err = ListPods(ctx, c, ns, name); err != nil {
		s.Skipped = append(s.Skipped, err.Error())
	}
	if s.Results, err = ListResults(ctx, c, ns, name); err != nil {
		s.Skipped = append(s.Skipped, err.Error())
	}
	if s.Actions, err = ListActions(ctx, c, ns, name); err != nil {
		s.Skipped = append(s.Skipped, err.Error())
	}
	return s, nil
}

// OwnerUID is the UID of the Workflow owning obj ("" when none does).
func OwnerUID(obj metav1.Object) string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "Workflow" && ref.UID != "" {
			return string(ref.UID)
		}
	}
	return ""
}

// NodeID is the node a pod runs (its node-id annotation; argo's older pods are named after the node).
func NodeID(pod *corev1.Pod) string {
	if id := pod.Annotations[common.AnnotationKeyNodeID]; id != "" {
		return id
	}
	return pod.Name
}

// HoldsFinalizer reports whether a pod carries argo's status finalizer.
func HoldsFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, common.FinalizerPodStatus)
}

// PodEnd is when a terminal pod ended: the latest container finish, else its Ready condition's last
// transition, else zero.
func PodEnd(pod *corev1.Pod) time.Time {
	var end time.Time
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			if t := s.State.Terminated; t != nil && t.FinishedAt.After(end) {
				end = t.FinishedAt.Time
			}
		}
	}
	if end.IsZero() {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				end = c.LastTransitionTime.Time
			}
		}
	}
	return end
}
