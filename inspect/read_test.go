package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/internal/fakeapi"
)

var (
	workflowsGR = schema.GroupResource{Group: "argoproj.io", Resource: "workflows"}
	t0          = time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC)
)

func TestReasonSaysInAFewWordsWhyACallFailed(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		err      error
		want     string
	}{
		{"a forbidden call is forbidden", apierrors.NewForbidden(workflowsGR, "wf", errors.New("no")), "forbidden"},
		{"an unauthorized call points at the credentials", apierrors.NewUnauthorized("who are you"), "unauthorized (check the kubeconfig's credentials)"},
		{"a resource type the API server does not serve points at its CRD", apierrors.NewNotFound(workflowsGR, ""),
			"the resource is not served (is its CRD installed? kubectl apply -k config/crd)"},
		{"a missing object is not found", apierrors.NewNotFound(workflowsGR, "wf"), "not found"},
		{"a refused connection is an unreachable API server", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"),
			"API server unreachable: dial tcp 127.0.0.1:6443: connect: connection refused"},
		{"a network error is an unreachable API server", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")},
			"API server unreachable: dial tcp: i/o timeout"},
		{"anything else is its own message", errors.New("the server is on fire"), "the server is on fire"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := inspect.Reason(tc.err); got != tc.want {
				t.Errorf("Reason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAReadErrorSaysWhatWasReadWhereAndWhy(t *testing.T) {
	forbidden := apierrors.NewForbidden(workflowsGR, "", errors.New("no"))
	for _, tc := range []struct {
		sentence string
		err      *inspect.ReadError
		want     string
	}{
		{"a read in every namespace says so", &inspect.ReadError{Verb: "list", Resource: "pods", Err: forbidden},
			"cannot list pods in all namespaces: forbidden"},
		{"a read in one namespace names it", &inspect.ReadError{Verb: "list", Resource: "pods", Namespace: "ns", Err: forbidden},
			"cannot list pods in namespace ns: forbidden"},
		{"a cluster-scoped read names no namespace", &inspect.ReadError{Verb: "get", Resource: "customresourcedefinition x", Cluster: true, Err: forbidden},
			"cannot get customresourcedefinition x: forbidden"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if !apierrors.IsForbidden(tc.err) {
				t.Error("the API error is not reachable through the ReadError")
			}
		})
	}
}

// api is one set of fake clients the diagnostics read through.
type api struct {
	kube    *kubefake.Clientset
	argo    *argofake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	clients *inspect.Clients
}

// newAPI holds objects, each in the fake that serves its kind (fakeapi.New).
func newAPI(t *testing.T, objects ...runtime.Object) *api {
	t.Helper()
	fakes := fakeapi.New(objects...)
	a := &api{kube: fakes.Kube, argo: fakes.Argo, dynamic: fakes.Dynamic}
	actions, err := fakes.Actions()
	if err != nil {
		t.Fatal(err)
	}
	a.clients = &inspect.Clients{Kube: a.kube, Argo: a.argo, Dynamic: a.dynamic, Actions: actions, Host: "https://test"}
	return a
}

// refuse answers every call of verb on resource with err.
func (a *api) refuse(fake clienttesting.FakeClient, verb, resource string, err error) {
	fake.PrependReactor(verb, resource, func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err })
}

// storedWorkflow is workflow ns/name as the API server stores it: suspended by wfguard, written by two
// managers, the latest at t0.
func storedWorkflow(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": map[string]any{"namespace": "ns", "name": name, "uid": "uid-" + name},
		"spec":     map[string]any{"entrypoint": "main"},
		"status":   map[string]any{"phase": "Running", "suspended": true}}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Time: &metav1.Time{Time: t0.Add(-time.Hour)}},
		{Manager: "wfguard-controller", Time: &metav1.Time{Time: t0}},
	})
	return u
}

// undecodableWorkflow is workflow ns/name whose spec argo's types cannot read.
func undecodableWorkflow(name string) *unstructured.Unstructured {
	u := storedWorkflow(name)
	u.Object["spec"] = map[string]any{"templates": "not a list"}
	return u
}

func TestGetWorkflowDecodesWfguardsFieldsAndSaysWhyItCouldNot(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		refuse   error // the API's answer to the get, if not the workflow
		want     string
	}{
		{sentence: "a workflow is decoded with wfguard's status fields and its latest write", want: "wf Running suspended, last written " + t0.Format(time.RFC3339)},
		{sentence: "a missing workflow says so", refuse: apierrors.NewNotFound(workflowsGR, "wf"), want: "workflow ns/wf not found"},
		{sentence: "a CRD not installed says so", refuse: apierrors.NewNotFound(workflowsGR, ""),
			want: "cannot get workflow wf in namespace ns: the resource is not served (is its CRD installed? kubectl apply -k config/crd)"},
		{sentence: "a forbidden read says what it could not read", refuse: apierrors.NewForbidden(workflowsGR, "wf", errors.New("no")),
			want: "cannot get workflow wf in namespace ns: forbidden"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := newAPI(t, storedWorkflow("wf"))
			if tc.refuse != nil {
				a.refuse(a.dynamic, "get", "workflows", tc.refuse)
			}
			w, err := inspect.GetWorkflow(t.Context(), a.clients, "ns", "wf")
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprintf("%s %s suspended, last written %s", w.WF.Name, w.WF.Status.Phase, w.LastWrite.Format(time.RFC3339))
				if w.Ext.Suspended == nil || !*w.Ext.Suspended || w.Key() != "ns/wf" {
					got = fmt.Sprintf("suspended %v, key %s", w.Ext.Suspended, w.Key())
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// pagedBy answers list calls of resource on fake in pages of one object each, in the order of names,
// recording the page size each call asked for. A call past the last page is refused, so a lister that
// does not stop fails instead of hanging. (The dynamic fake drops the options of a list in all namespaces.)
func pagedBy(fake clienttesting.FakeClient, resource string, list func(names []string, next string) runtime.Object, names []string, limits *[]int64) {
	fake.PrependReactor("list", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		opts := action.(clienttesting.ListActionImpl).ListOptions
		*limits = append(*limits, opts.Limit)
		if len(*limits) > len(names) {
			return true, nil, fmt.Errorf("listed %d times for %d pages", len(*limits), len(names))
		}
		i := slices.Index(names, opts.Continue) + 1 // "" is the first page
		next := ""
		if i+1 < len(names) {
			next = names[i]
		}
		return true, list(names[i:i+1], next), nil
	})
}

func TestListingsReadEveryPageAndSetUndecodableWorkflowsAside(t *testing.T) {
	ctx := t.Context()
	t.Run("workflows: every page read, in pages of 500, undecodable ones set aside with their UIDs", func(t *testing.T) {
		a := newAPI(t)
		var limits []int64
		pagedBy(a.dynamic, "workflows", func(names []string, next string) runtime.Object {
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowList"}}
			for _, n := range names {
				w := storedWorkflow(n)
				if strings.HasPrefix(n, "bad") {
					w = undecodableWorkflow(n)
				}
				list.Items = append(list.Items, *w)
			}
			list.SetContinue(next)
			return list
		}, []string{"a", "bad", "b"}, &limits)
		good, bad, err := inspect.ListWorkflows(ctx, a.clients, "ns")
		var names []string
		for _, w := range good {
			names = append(names, w.WF.Name)
		}
		if err != nil || !slices.Equal(names, []string{"a", "b"}) || len(bad) != 1 || bad[0].UID != "uid-bad" || bad[0].Err == nil {
			t.Errorf("ListWorkflows = %v, %+v, %v; want a and b, and bad set aside with its UID and why", names, bad, err)
		}
		if !slices.Equal(limits, []int64{500, 500, 500}) {
			t.Errorf("pages asked for %v items, want 3 pages of 500", limits)
		}
	})
	t.Run("pods: every page read, selected by the workflow's label", func(t *testing.T) {
		a := newAPI(t)
		var limits []int64
		pagedBy(a.kube, "pods", func(names []string, next string) runtime.Object {
			list := &corev1.PodList{ListMeta: metav1.ListMeta{Continue: next}}
			for _, n := range names {
				list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n,
					Labels: map[string]string{common.LabelKeyWorkflow: "wf"}}})
			}
			return list
		}, []string{"p1", "p2"}, &limits)
		pods, err := inspect.ListPods(ctx, a.clients, "ns", "wf")
		if err != nil || len(pods) != 2 || pods[0].Name != "p1" || pods[1].Name != "p2" {
			t.Errorf("ListPods = %v, %v; want p1 and p2", pods, err)
		}
		if selector := a.kube.Actions()[0].(clienttesting.ListActionImpl).ListOptions.LabelSelector; selector != common.LabelKeyWorkflow+"=wf" {
			t.Errorf("selected %q, want the workflow's label", selector)
		}
	})
}

func TestEachListingSelectsWhatItIsAskedAndSaysWhatFailed(t *testing.T) {
	pod := func(name, workflow string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: workflowLabel(workflow)}}
	}
	result := func(name, workflow string) *wfv1.WorkflowTaskResult {
		return &wfv1.WorkflowTaskResult{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: workflowLabel(workflow)}}
	}
	objects := []runtime.Object{pod("of-wf", "wf"), pod("of-other", "other"), pod("no-workflow", ""),
		result("r-wf", "wf"), result("r-other", "other"), result("r-none", ""),
		action("act-wf", "wf"), action("act-other", "other"), workflowCRD()}
	forbidden := apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))
	for _, tc := range []struct {
		sentence string
		read     func(context.Context, *inspect.Clients) ([]string, error)
		refuse   func(*api)
		want     string
	}{
		{sentence: "a workflow's pods carry its label", read: podNames("wf"), want: "[of-wf]"},
		{sentence: "every workflow's pods carry the label, whatever its value", read: podNames(""), want: "[of-other of-wf]"},
		{sentence: "pods that cannot be listed say where", read: podNames(""), refuse: func(a *api) { a.refuse(a.kube, "list", "pods", forbidden) },
			want: "cannot list pods in namespace ns: forbidden"},
		{sentence: "a workflow's task results carry its label", read: resultNames("wf"), want: "[r-wf]"},
		{sentence: "every workflow's task results carry the label", read: resultNames(""), want: "[r-other r-wf]"},
		{sentence: "task results that cannot be listed say where", read: resultNames("wf"),
			refuse: func(a *api) { a.refuse(a.argo, "list", "workflowtaskresults", forbidden) },
			want:   "cannot list workflowtaskresults in namespace ns: forbidden"},
		{sentence: "a workflow's actions name it in workflowRef, labelled or not", read: actionNames("wf"), want: "[act-wf]"},
		{sentence: "every action is listed", read: actionNames(""), want: "[act-other act-wf]"},
		{sentence: "actions that cannot be listed say where", read: actionNames("wf"),
			refuse: func(a *api) { a.refuse(a.dynamic, "list", "workflowactions", forbidden) },
			want:   "cannot list workflowactions in namespace ns: forbidden"},
		{sentence: "workflows that cannot be listed say where", read: workflowNames(""),
			refuse: func(a *api) { a.refuse(a.dynamic, "list", "workflows", forbidden) },
			want:   "cannot list workflows in all namespaces: forbidden"},
		{sentence: "the Workflow CRD is read by its name", read: crdName, want: "[workflows.argoproj.io]"},
		{sentence: "a CRD that cannot be read says so, in no namespace", read: crdName,
			refuse: func(a *api) { a.refuse(a.dynamic, "get", "customresourcedefinitions", forbidden) },
			want:   "cannot get customresourcedefinition workflows.argoproj.io: forbidden"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			a := newAPI(t, objects...)
			if tc.refuse != nil {
				tc.refuse(a)
			}
			names, err := tc.read(t.Context(), a.clients)
			got := fmt.Sprint(names)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// workflowLabel labels an object with its workflow; none for "".
func workflowLabel(workflow string) map[string]string {
	if workflow == "" {
		return nil
	}
	return map[string]string{common.LabelKeyWorkflow: workflow}
}

func workflowNames(ns string) func(context.Context, *inspect.Clients) ([]string, error) {
	return func(ctx context.Context, c *inspect.Clients) ([]string, error) {
		workflows, _, err := inspect.ListWorkflows(ctx, c, ns)
		var names []string
		for _, w := range workflows {
			names = append(names, w.WF.Name)
		}
		return names, err
	}
}

func crdName(ctx context.Context, c *inspect.Clients) ([]string, error) {
	crd, err := inspect.WorkflowCRD(ctx, c)
	if err != nil {
		return nil, err
	}
	return []string{crd.GetName()}, nil
}

func podNames(workflow string) func(context.Context, *inspect.Clients) ([]string, error) {
	return func(ctx context.Context, c *inspect.Clients) ([]string, error) {
		pods, err := inspect.ListPods(ctx, c, "ns", workflow)
		return sortedNames(pods), err
	}
}

func resultNames(workflow string) func(context.Context, *inspect.Clients) ([]string, error) {
	return func(ctx context.Context, c *inspect.Clients) ([]string, error) {
		results, err := inspect.ListResults(ctx, c, "ns", workflow)
		return sortedNames(results), err
	}
}

func actionNames(workflow string) func(context.Context, *inspect.Clients) ([]string, error) {
	return func(ctx context.Context, c *inspect.Clients) ([]string, error) {
		actions, err := inspect.ListActions(ctx, c, "ns", workflow)
		return sortedNames(actions), err
	}
}

func sortedNames[T metav1.Object](objects []T) []string {
	var names []string
	for _, o := range objects {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	return names
}

// action is a WorkflowAction on workflow, as the API stores it, without labels.
func action(name, workflow string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowAction",
		"metadata": map[string]any{"namespace": "ns", "name": name},
		"spec":     map[string]any{"action": "Suspend", "workflowRef": map[string]any{"name": workflow}}}}
}

func workflowCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "workflows.argoproj.io"}}}
}
