package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/admissionpolicy"
)

// admissionResources are the resources of the admission policy kinds config/policy ships.
var admissionResources = map[string]string{
	"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
	"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
	"MutatingAdmissionPolicy":          "mutatingadmissionpolicies",
	"MutatingAdmissionPolicyBinding":   "mutatingadmissionpolicybindings",
}

// policyObjects are the objects of file (relative to the module root), each with its client.
func policyObjects(t testing.TB, config *rest.Config, file string) ([]*unstructured.Unstructured, []dynamic.ResourceInterface) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ModuleRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(config)
	var objs []*unstructured.Unstructured
	var clients []dynamic.ResourceInterface
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		resource, ok := admissionResources[obj.GetKind()]
		if !ok {
			t.Fatalf("%s holds a %s, not an admission policy or binding", file, obj.GetKind())
		}
		objs = append(objs, obj)
		clients = append(clients, dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}))
	}
	return objs, clients
}

// InstallPolicy creates the admission policies and bindings of file (relative to the module root) with strict
// field validation, or updates those an earlier run (-count) left. With ns set, each binding is narrowed to
// that namespace, so the other tests of the binary run without the policy; with ns "", bindings are as
// shipped, for every namespace.
func InstallPolicy(t testing.TB, config *rest.Config, file, ns string) {
	t.Helper()
	objs, clients := policyObjects(t, config, file)
	for i, obj := range objs {
		if ns != "" && strings.HasSuffix(obj.GetKind(), "Binding") {
			if err := unstructured.SetNestedField(obj.Object, map[string]any{"namespaceSelector": map[string]any{
				"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}, "spec", "matchResources"); err != nil {
				t.Fatal(err)
			}
		}
		client := clients[i]
		_, err := client.Create(t.Context(), obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := client.Get(t.Context(), obj.GetName(), metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			obj.SetResourceVersion(existing.GetResourceVersion())
			_, err = client.Update(t.Context(), obj, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
		}
		if err != nil {
			t.Fatalf("installing %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// RemovePolicy deletes the admission policies and bindings of file, if they exist.
func RemovePolicy(t testing.TB, config *rest.Config, file string) {
	t.Helper()
	objs, clients := policyObjects(t, config, file)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // also from a Cleanup
	defer cancel()
	for i, obj := range objs {
		if err := clients[i].Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// WaitPolicySettled waits until the controller takes the ValidatingAdmissionPolicy name (and its binding)
// as in force for an object created from now on (admissionpolicy.SettleTime after they last changed).
func WaitPolicySettled(t testing.TB, config *rest.Config, name string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(config)
	why := "not read yet"
	if err := wait.PollUntilContextTimeout(t.Context(), pollInterval, DefaultTimeout, true, func(ctx context.Context) (bool, error) {
		v, err := admissionpolicy.Read(ctx, kube, name)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		why = v.Admitted(time.Now())
		return why == "", nil
	}); err != nil {
		t.Fatalf("policy %s never in force for new objects: %v (last: %s)", name, err, why)
	}
}
