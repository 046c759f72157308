package fakeapi_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/internal/fakeapi"
)

var actionsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowactions"}

func action(name, rv string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowAction",
		"metadata": map[string]any{"namespace": "ns", "name": name, "uid": "uid-" + name, "resourceVersion": rv},
		"spec":     map[string]any{"action": "Suspend", "workflowRef": map[string]any{"name": "wf"}}}}
	u.SetLabels(labels)
	return u
}

func TestTheFakeAPIAnswersRESTClientsAsTheAPIServerWould(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		check    func(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client)
	}{
		{"a status written through the REST client is stored with a new resourceVersion and its UID kept", aStatusWriteIsStoredAtANewVersion},
		{"an update at an older resourceVersion is a conflict, through REST as through the dynamic client", anUpdateAtAnOlderVersionConflicts},
		{"an error a reactor injects reaches the REST client as that API error", anInjectedErrorReachesTheRESTClient},
		{"a list selects by label and a missing object is not found", aListSelectsByLabel},
		{"a deletion goes to the fake", aDeletionReachesTheFake},
		{"a watch streams what is stored, then each change, until it is stopped", aWatchStreamsWhatIsStoredThenEachChange},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			fake := fakeapi.NewDynamic(action("a", "7", nil), action("b", "3", map[string]string{"team": "blue"}))
			client, err := actionsv1.NewForConfig(fakeapi.Config(fake))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, t.Context(), fake, client)
		})
	}
}

func aStatusWriteIsStoredAtANewVersion(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	a, err := client.Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = actionsv1.PhaseSucceeded
	written, err := client.Namespace("ns").UpdateStatus(ctx, a, metav1.UpdateOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := fake.Resource(actionsResource).Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
	if written.ResourceVersion != "8" || stored.GetResourceVersion() != "8" || stored.GetUID() != "uid-a" || phase != string(actionsv1.PhaseSucceeded) {
		t.Errorf("answered rv %s, stored rv %s uid %s phase %s; want rv 8, uid-a, Succeeded", written.ResourceVersion, stored.GetResourceVersion(), stored.GetUID(), phase)
	}
	var verbs []string
	for _, a := range fake.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetSubresource())
	}
	if fmt.Sprint(verbs) != "[get  update status get ]" {
		t.Errorf("recorded %q, want the get, the update of the status subresource, and the test's get", verbs)
	}
}

func anUpdateAtAnOlderVersionConflicts(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	stale := &actionsv1.WorkflowAction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "6"}}
	if _, err := client.Namespace("ns").UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("REST update at rv 6 = %v, want a conflict", err)
	}
	if _, err := fake.Resource(actionsResource).Namespace("ns").Update(ctx, action("a", "6", nil), metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("dynamic update at rv 6 = %v, want a conflict", err)
	}
}

func anInjectedErrorReachesTheRESTClient(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	fake.PrependReactor("list", "workflowactions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(actionsResource.GroupResource(), "", nil)
	})
	if _, err := client.Namespace("ns").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list = %v, want forbidden", err)
	}
}

func aListSelectsByLabel(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	list, err := client.Namespace("ns").List(ctx, metav1.ListOptions{LabelSelector: "team=blue"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Errorf("list team=blue = %v, %v; want b alone", list, err)
	}
	if _, err := client.Namespace("ns").Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get missing = %v, want not found", err)
	}
}

func aDeletionReachesTheFake(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	if err := client.Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Resource(actionsResource).Namespace("ns").Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the deletion get = %v, want not found", err)
	}
}

func aWatchStreamsWhatIsStoredThenEachChange(t *testing.T, ctx context.Context, fake *dynamicfake.FakeDynamicClient, client *actionsv1.Client) {
	w, err := client.Namespace("ns").Watch(ctx, metav1.ListOptions{LabelSelector: "team=blue"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := fake.Resource(actionsResource).Namespace("ns").Update(ctx, action("b", "3", map[string]string{"team": "blue", "seen": "yes"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for e := range w.ResultChan() {
		a := e.Object.(*actionsv1.WorkflowAction)
		got = append(got, fmt.Sprintf("%s %s %s", e.Type, a.Name, a.Labels["seen"]))
		if len(got) == 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[ADDED b  MODIFIED b yes]" {
		t.Errorf("events %q, want b added, then modified", got)
	}
}
