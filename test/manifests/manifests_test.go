package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/wfguard/wfguard/actions"
	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

const (
	controllerSA = "system:serviceaccount:argo:wfguard-controller"
	executorSA   = "system:serviceaccount:argo:default"
	// rbacTimeout bounds the wait for the apiserver's RBAC authorizer to see the bindings just created.
	rbacTimeout = 30 * time.Second
)

// TestInstallManifests creates every object of config/rbac, config/manager and config/policy (as `kubectl
// apply -k` would, minus the CRDs, which the control plane already installed from config/crd) with strict
// field validation, then asks the apiserver's authorizer what the two ServiceAccounts may do.
func TestInstallManifests(t *testing.T) {
	root := harness.ModuleRoot(t)
	var objs []*unstructured.Unstructured
	for _, dir := range []string{"config/rbac", "config/manager", "config/policy"} {
		objs = append(objs, loadKustomization(t, root, dir)...)
	}
	// Namespaces first, so namespaced objects can be created in them.
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace"
	})

	t.Run("the manifests hold the objects an install needs", func(t *testing.T) {
		want := []string{
			"Namespace argo",
			"ServiceAccount argo/wfguard-controller",
			"ClusterRole wfguard-controller",
			"ClusterRoleBinding wfguard-controller",
			"Role argo/wfguard-controller-record-key",
			"RoleBinding argo/wfguard-controller-record-key",
			"ClusterRole wfguard-executor",
			"RoleBinding argo/wfguard-executor-default",
			"Deployment argo/wfguard-controller",
			"Service argo/wfguard-controller-metrics",
			"ValidatingAdmissionPolicy wfguard-executor-writes-own-taskresult",
			"ValidatingAdmissionPolicyBinding wfguard-executor-writes-own-taskresult",
			"MutatingAdmissionPolicy wfguard-taskresult-writer-stamp",
			"MutatingAdmissionPolicyBinding wfguard-taskresult-writer-stamp",
			"ValidatingAdmissionPolicy " + actions.RetryOverridesPolicy,
			"ValidatingAdmissionPolicyBinding " + actions.RetryOverridesPolicy,
			"ValidatingAdmissionPolicy wfguard-workflow-pods-by-controller",
			"ValidatingAdmissionPolicyBinding wfguard-workflow-pods-by-controller",
		}
		var got []string
		for _, o := range objs {
			got = append(got, describe(o))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("no %s in config/rbac, config/manager or config/policy; found %v", w, got)
			}
		}
	})

	ctx := t.Context()
	config := cp.Config()
	kube := kubernetes.NewForConfigOrDie(config)
	dyn := dynamic.NewForConfigOrDie(config)
	groups, err := restmapper.GetAPIGroupResources(kube.Discovery())
	if err != nil {
		t.Fatalf("discovering API resources: %v", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)

	for _, obj := range objs {
		t.Run("the apiserver accepts "+describe(obj), func(t *testing.T) {
			gvk := obj.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("no API resource for %s: %v", gvk, err)
			}
			var client dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if mapping.Scope.Name() == "namespace" {
				if obj.GetNamespace() == "" {
					t.Fatalf("namespaced %s has no metadata.namespace", describe(obj))
				}
				client = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			}
			// Strict validation turns unknown or duplicate fields (typos) into errors. An object left by an
			// earlier run in this control plane (-count=N) is updated instead, with the same validation.
			_, err = client.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
			if apierrors.IsAlreadyExists(err) {
				existing, getErr := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
				if getErr != nil {
					t.Fatal(getErr)
				}
				obj = obj.DeepCopy()
				obj.SetResourceVersion(existing.GetResourceVersion())
				_, err = client.Update(ctx, obj, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
			}
			if err != nil {
				t.Fatalf("creating %s: %v", describe(obj), err)
			}
		})
	}
	if t.Failed() {
		t.FailNow()
	}

	t.Run("the Deployment runs as the bound ServiceAccount and the Service selects its pods", func(t *testing.T) {
		d, err := kube.AppsV1().Deployments("argo").Get(ctx, "wfguard-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "wfguard-controller" {
			t.Errorf("serviceAccountName = %q, want wfguard-controller", sa)
		}
		c := d.Spec.Template.Spec.Containers[0]
		// make image builds ghcr.io/wfguard/wfguard:latest to be loaded into the node's runtime, never pulled.
		if c.Image != "ghcr.io/wfguard/wfguard:latest" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("image = %s (pull %s), want the one make image builds, ghcr.io/wfguard/wfguard:latest, pulled IfNotPresent", c.Image, c.ImagePullPolicy)
		}
		if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
			t.Errorf("pod securityContext %v, want runAsUser 65532, the image's user", sc)
		}
		if len(c.Args) == 0 || c.Args[0] != "controller" || !slices.Contains(c.Args, "--leader-elect=true") {
			t.Errorf("args = %v, want `controller --leader-elect=true ...`", c.Args)
		}
		identity := false
		for _, e := range c.Env {
			identity = identity || (e.Name == "LEADER_ELECTION_IDENTITY" && e.ValueFrom != nil &&
				e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name")
		}
		if !identity {
			t.Errorf("no LEADER_ELECTION_IDENTITY from metadata.name in %v", c.Env)
		}
		svc, err := kube.CoreV1().Services("argo").Get(ctx, "wfguard-controller-metrics", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range svc.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service selector %s=%s does not match the pod labels %v", k, v, d.Spec.Template.Labels)
			}
		}
	})

	// Allowed rows wait for the RBAC authorizer to see the new bindings. Denied rows come after the
	// allowed rows of the same subject, so a denial is not just a binding the authorizer has not seen yet.
	cases := []struct {
		sentence string
		user     string
		attrs    authorizationv1.ResourceAttributes
		allowed  bool
	}{
		{"the controller can update workflows in any namespace", controllerSA, argo("team-a", "update", "workflows", ""), true},
		{"the controller can patch workflows", controllerSA, argo("team-a", "patch", "workflows", ""), true},
		{"the controller can watch workflows across namespaces", controllerSA, argo("", "watch", "workflows", ""), true},
		{"the controller can delete workflows", controllerSA, argo("team-a", "delete", "workflows", ""), true},
		{"the controller can set workflow ownerReferences that block deletion", controllerSA, argo("team-a", "update", "workflows", "finalizers"), true},
		{"the controller can create workflows (the runs of CronWorkflows)", controllerSA, argo("team-a", "create", "workflows", ""), true},
		{"the controller can watch cronworkflows across namespaces", controllerSA, argo("", "watch", "cronworkflows", ""), true},
		{"the controller can update cronworkflows (their status)", controllerSA, argo("team-a", "update", "cronworkflows", ""), true},
		{"the controller can update cronworkflows/status", controllerSA, argo("team-a", "update", "cronworkflows", "status"), true},
		{"the controller can set run ownerReferences that block cronworkflow deletion", controllerSA, argo("team-a", "update", "cronworkflows", "finalizers"), true},
		{"the controller can list workflowtemplates", controllerSA, argo("team-a", "list", "workflowtemplates", ""), true},
		{"the controller can watch clusterworkflowtemplates", controllerSA, argo("", "watch", "clusterworkflowtemplates", ""), true},
		{"the controller can watch workflowtaskresults", controllerSA, argo("team-a", "watch", "workflowtaskresults", ""), true},
		{"the controller can deletecollection workflowtaskresults", controllerSA, argo("team-a", "deletecollection", "workflowtaskresults", ""), true},
		{"the controller can delete a workflowtaskresult (a retried node's)", controllerSA, argo("team-a", "delete", "workflowtaskresults", ""), true},
		{"the controller can delete workflowactions", controllerSA, argo("team-a", "delete", "workflowactions", ""), true},
		{"the controller can update workflowactions/status", controllerSA, argo("team-a", "update", "workflowactions", "status"), true},
		{"the controller can patch workflowactions/status", controllerSA, argo("team-a", "patch", "workflowactions", "status"), true},
		{"the controller can create pods", controllerSA, core("team-a", "create", "pods", ""), true},
		{"the controller can create a workflow's pods (what the pod policy asks of pods labelled with a workflow)", controllerSA,
			named(argo("team-a", "create", "workflows", "pods"), "any-workflow"), true},
		{"the controller can patch pods (finalizer release, completed label)", controllerSA, core("team-a", "patch", "pods", ""), true},
		{"the controller can delete pods (podGC)", controllerSA, core("team-a", "delete", "pods", ""), true},
		{"the controller can read the Workflow CRD to check its schema", controllerSA,
			authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Verb: "get", Resource: "customresourcedefinitions", Name: "workflows.argoproj.io"}, true},
		{"the controller can read the WorkflowAction CRD to check it is installed", controllerSA,
			authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Verb: "get", Resource: "customresourcedefinitions", Name: "workflowactions.argoproj.io"}, true},
		{"the controller can watch configmaps", controllerSA, core("argo", "watch", "configmaps", ""), true},
		{"the controller can read a ServiceAccount (an executor's, for the name of its token Secret)", controllerSA, core("team-a", "get", "serviceaccounts", ""), true},
		{"the controller can create core events", controllerSA, core("team-a", "create", "events", ""), true},
		{"the controller can patch events.k8s.io events", controllerSA, attrs("events.k8s.io", "team-a", "patch", "events", ""), true},
		{"the controller can create poddisruptionbudgets (spec.podDisruptionBudget)", controllerSA, attrs("policy", "team-a", "create", "poddisruptionbudgets", ""), true},
		{"the controller can delete poddisruptionbudgets (at workflow completion)", controllerSA, attrs("policy", "team-a", "delete", "poddisruptionbudgets", ""), true},
		{"the controller can create leases", controllerSA, attrs("coordination.k8s.io", "argo", "create", "leases", ""), true},
		{"the controller can update leases", controllerSA, attrs("coordination.k8s.io", "argo", "update", "leases", ""), true},
		{"the controller can read its record key", controllerSA, named(core("argo", "get", "secrets", ""), "wfguard-record-key"), true},
		{"the controller can create its record key", controllerSA, core("argo", "create", "secrets", ""), true},
		{"the controller can read the admission policy a Retry that rewrites its workflow needs", controllerSA,
			named(attrs("admissionregistration.k8s.io", "", "get", "validatingadmissionpolicies", ""), actions.RetryOverridesPolicy), true},
		{"the controller can read that policy's binding", controllerSA,
			named(attrs("admissionregistration.k8s.io", "", "get", "validatingadmissionpolicybindings", ""), actions.RetryOverridesPolicy), true},
		{"the executor can create workflowtaskresults in argo", executorSA, argo("argo", "create", "workflowtaskresults", ""), true},
		{"the executor can patch workflowtaskresults in argo", executorSA, argo("argo", "patch", "workflowtaskresults", ""), true},

		{"the controller cannot delete cronworkflows", controllerSA, argo("team-a", "delete", "cronworkflows", ""), false},
		{"the controller cannot create cronworkflows", controllerSA, argo("team-a", "create", "cronworkflows", ""), false},
		{"the controller cannot update workflowtemplates", controllerSA, argo("team-a", "update", "workflowtemplates", ""), false},
		{"the controller cannot create workflowtaskresults", controllerSA, argo("team-a", "create", "workflowtaskresults", ""), false},
		{"the controller cannot create workflowactions", controllerSA, argo("team-a", "create", "workflowactions", ""), false},
		{"the controller cannot update pods", controllerSA, core("team-a", "update", "pods", ""), false},
		{"the controller can create configmaps (memoize caches)", controllerSA, core("argo", "create", "configmaps", ""), true},
		{"the controller cannot delete configmaps", controllerSA, core("argo", "delete", "configmaps", ""), false},
		{"the controller cannot read other secrets of its namespace", controllerSA, named(core("argo", "get", "secrets", ""), "argo-server-sso"), false},
		{"the controller cannot list secrets", controllerSA, core("argo", "list", "secrets", ""), false},
		{"the controller cannot read secrets of workflow namespaces", controllerSA, core("team-a", "get", "secrets", ""), false},
		{"the controller cannot create secrets in workflow namespaces", controllerSA, core("team-a", "create", "secrets", ""), false},
		{"the controller cannot update its record key", controllerSA, named(core("argo", "update", "secrets", ""), "wfguard-record-key"), false},
		{"the controller cannot exec into pods", controllerSA, core("team-a", "create", "pods", "exec"), false},
		{"the controller cannot list ServiceAccounts", controllerSA, core("team-a", "list", "serviceaccounts", ""), false},
		{"the controller cannot mint ServiceAccount tokens", controllerSA, core("team-a", "create", "serviceaccounts", "token"), false},
		{"the controller cannot read other CRDs", controllerSA,
			authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Verb: "get", Resource: "customresourcedefinitions", Name: "pods.example.com"}, false},
		{"the controller cannot read other admission policies", controllerSA,
			named(attrs("admissionregistration.k8s.io", "", "get", "validatingadmissionpolicies", ""), "wfguard-executor-writes-own-taskresult"), false},
		{"the controller cannot list admission policies", controllerSA, attrs("admissionregistration.k8s.io", "", "list", "validatingadmissionpolicies", ""), false},
		{"the controller cannot change the policy it reads", controllerSA,
			named(attrs("admissionregistration.k8s.io", "", "update", "validatingadmissionpolicies", ""), actions.RetryOverridesPolicy), false},
		{"the controller cannot update poddisruptionbudgets", controllerSA, attrs("policy", "team-a", "update", "poddisruptionbudgets", ""), false},
		{"the controller cannot delete leases", controllerSA, attrs("coordination.k8s.io", "argo", "delete", "leases", ""), false},
		{"the executor cannot delete pods", executorSA, core("argo", "delete", "pods", ""), false},
		{"the executor cannot create a workflow's pods", executorSA, argo("argo", "create", "workflows", "pods"), false},
		{"the executor cannot get workflows", executorSA, argo("argo", "get", "workflows", ""), false},
		{"the executor cannot delete workflowtaskresults", executorSA, argo("argo", "delete", "workflowtaskresults", ""), false},
		{"the executor binding does not reach other namespaces", executorSA, argo("team-a", "create", "workflowtaskresults", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               tc.user,
				Groups:             serviceAccountGroups(tc.user),
				ResourceAttributes: &tc.attrs,
			}}
			var status authorizationv1.SubjectAccessReviewStatus
			check := func(ctx context.Context) (bool, error) {
				got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
				if err != nil {
					return false, err
				}
				status = got.Status
				return status.Allowed, nil
			}
			if tc.allowed {
				if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, rbacTimeout, true, check); err != nil {
					t.Fatalf("%s was not allowed %s within %s (last: %+v): %v", tc.user, describeAttrs(tc.attrs), rbacTimeout, status, err)
				}
				return
			}
			allowed, err := check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if allowed {
				t.Fatalf("%s is allowed %s (%s), want denied", tc.user, describeAttrs(tc.attrs), status.Reason)
			}
		})
	}
}

// TestDefaultKustomization checks the entry point `kubectl apply -k config/default`.
func TestDefaultKustomization(t *testing.T) {
	root := harness.ModuleRoot(t)
	t.Run("config/default installs the CRDs, the RBAC, the controller and the policies", func(t *testing.T) {
		got := readKustomization(t, filepath.Join(root, "config/default"))
		for _, want := range []string{"../crd", "../rbac", "../manager", "../policy"} {
			if !slices.Contains(got, want) {
				t.Errorf("config/default/kustomization.yaml resources = %v, missing %s", got, want)
			}
		}
	})
	t.Run("config/policy installs every policy wfguard relies on, and not the example", func(t *testing.T) {
		got := readKustomization(t, filepath.Join(root, "config/policy"))
		for _, want := range []string{"executor-writes-own-taskresult.yaml", "taskresult-writer-stamp.yaml", "retry-overrides-need-update.yaml",
			"workflow-pods-by-controller.yaml"} {
			if !slices.Contains(got, want) {
				t.Errorf("config/policy/kustomization.yaml resources = %v, missing %s", got, want)
			}
		}
		if slices.Contains(got, "deny-terminate-for-developers.yaml") {
			t.Errorf("config/policy/kustomization.yaml installs the example deny-terminate-for-developers.yaml")
		}
	})
	for _, rel := range []string{"config/crd", "config/crd/argo"} {
		t.Run(rel+"/kustomization.yaml lists every CRD manifest in "+rel, func(t *testing.T) {
			dir := filepath.Join(root, rel)
			listed := readKustomization(t, dir)
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(listed, name) {
					t.Errorf("%s/kustomization.yaml does not list %s", rel, name)
				}
			}
		})
	}
	// Argo's other three CRDs are for running stock argo (the oracle of make compat); wfguard does not serve
	// them, so installing wfguard must not create them. CronWorkflows it does serve.
	t.Run("config/crd does not install argo's CRDs that wfguard does not serve", func(t *testing.T) {
		if listed := readKustomization(t, filepath.Join(root, "config/crd")); slices.Contains(listed, "argo") {
			t.Errorf("config/crd/kustomization.yaml resources = %v, include argo", listed)
		}
	})
	t.Run("config/crd installs the CronWorkflow CRD", func(t *testing.T) {
		if listed := readKustomization(t, filepath.Join(root, "config/crd")); !slices.Contains(listed, "argoproj.io_cronworkflows.yaml") {
			t.Errorf("config/crd/kustomization.yaml resources = %v, missing argoproj.io_cronworkflows.yaml", listed)
		}
	})
}

func argo(namespace, verb, resource, subresource string) authorizationv1.ResourceAttributes {
	return attrs("argoproj.io", namespace, verb, resource, subresource)
}

func core(namespace, verb, resource, subresource string) authorizationv1.ResourceAttributes {
	return attrs("", namespace, verb, resource, subresource)
}

func attrs(group, namespace, verb, resource, subresource string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Group: group, Namespace: namespace, Verb: verb, Resource: resource,
		Subresource: subresource}
}

// named is a with the object name set.
func named(a authorizationv1.ResourceAttributes, name string) authorizationv1.ResourceAttributes {
	a.Name = name
	return a
}

func describeAttrs(a authorizationv1.ResourceAttributes) string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in " + a.Namespace
	}
	return fmt.Sprintf("to %s %s %s", a.Verb, r, where)
}

// serviceAccountGroups are the groups the apiserver gives a ServiceAccount token's user.
func serviceAccountGroups(user string) []string {
	ns := strings.Split(user, ":")[2]
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// readKustomization returns the resources of dir/kustomization.yaml. It fails on any other field
// (patches, namePrefix, generators...), because loadKustomization does not apply them.
func readKustomization(t *testing.T, dir string) []string {
	t.Helper()
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&k); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var resources []string
	for key, value := range k {
		switch key {
		case "apiVersion", "kind":
		case "resources":
			list, ok := value.([]any)
			if !ok {
				t.Fatalf("%s: resources is %T, want a list", path, value)
			}
			for _, r := range list {
				s, ok := r.(string)
				if !ok {
					t.Fatalf("%s: resource %v is not a string", path, r)
				}
				resources = append(resources, s)
			}
		default:
			t.Fatalf("%s: field %q is not supported by this test's loader; extend loadKustomization", path, key)
		}
	}
	return resources
}

// loadKustomization reads the objects of rel/kustomization.yaml, following resources that are
// directories (nested kustomizations) and parsing multi-document YAML files.
func loadKustomization(t *testing.T, root, rel string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(root, rel)
	var objs []*unstructured.Unstructured
	for _, r := range readKustomization(t, dir) {
		path := filepath.Join(dir, r)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s/kustomization.yaml lists %s: %v", rel, r, err)
		}
		if info.IsDir() {
			objs = append(objs, loadKustomization(t, root, filepath.Join(rel, r))...)
			continue
		}
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Errorf("%s/kustomization.yaml lists the file %s outside its directory; kustomize refuses that", rel, r)
		}
		objs = append(objs, readObjects(t, path)...)
	}
	if len(objs) == 0 {
		t.Fatalf("%s holds no objects", rel)
	}
	return objs
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("parsing %s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			t.Fatalf("%s: object without apiVersion, kind or name: %v", path, obj.Object)
		}
		objs = append(objs, obj)
	}
}

func TestTheExamplePolicyDeniesTerminateToDevelopersOnly(t *testing.T) {
	root := harness.ModuleRoot(t)
	config := cp.Config()
	dyn := dynamic.NewForConfigOrDie(config)
	groups, err := restmapper.GetAPIGroupResources(kubernetes.NewForConfigOrDie(config).Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	files := []string{"config/policy/deny-terminate-for-developers.yaml", "config/rbac/action_requester_role.yaml"}
	for _, f := range files {
		for _, obj := range readObjects(t, filepath.Join(root, f)) {
			mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dyn.Resource(mapping.Resource).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating %s: %v", obj.GetName(), err)
			}
		}
	}
	ns := "policy-test"
	if err := controlplane.CreateNamedNamespace(t.Context(), config, ns); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(config)
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "developers-request-actions"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "wfguard-action-requester"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "developers", APIGroup: "rbac.authorization.k8s.io"}, {Kind: "Group", Name: "operators", APIGroup: "rbac.authorization.k8s.io"}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	as := func(group string) dynamic.ResourceInterface {
		c := rest.CopyConfig(config)
		c.Impersonate = rest.ImpersonationConfig{UserName: "someone-" + group, Groups: []string{group, "system:authenticated"}}
		return dynamic.NewForConfigOrDie(c).Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowactions"}).Namespace(ns)
	}
	action := func(kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowAction",
			"metadata": map[string]any{"generateName": "act-"},
			"spec":     map[string]any{"workflowRef": map[string]any{"name": "wf"}, "action": kind},
		}}
	}
	// The policy reaches the API server's admission asynchronously: wait until it denies.
	var denied error
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := as("developers").Create(ctx, action("Terminate"), metav1.CreateOptions{})
		if err != nil && ctx.Err() == nil {
			denied = err
		}
		return err != nil && strings.Contains(err.Error(), "developers may not terminate workflows"), nil
	})
	if err != nil {
		t.Fatalf("a developer's Terminate was never denied by the policy (last error %v)", denied)
	}
	for _, tc := range []struct{ group, action string }{{"developers", "Suspend"}, {"developers", "Stop"}, {"operators", "Terminate"}} {
		if _, err := as(tc.group).Create(t.Context(), action(tc.action), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s creating %s: %v, want allowed", tc.group, tc.action, err)
		}
	}
	// The sync contract reports the denial as argo-server would: PermissionDenied, and no action exists.
	dev := rest.CopyConfig(config)
	dev.Impersonate = rest.ImpersonationConfig{UserName: "someone-developers", Groups: []string{"developers", "system:authenticated"}}
	client, err := actionsv1.NewForConfig(dev)
	if err != nil {
		t.Fatal(err)
	}
	_, err = actions.Request(t.Context(), client.Namespace(ns), actionsv1.WorkflowActionSpec{
		WorkflowRef: actionsv1.WorkflowRef{Name: "wf"}, Action: actionsv1.ActionTerminate}, nil, time.Second)
	var aerr *actions.Error
	if !errors.As(err, &aerr) || aerr.Code != actions.PermissionDenied || aerr.Reason != actions.ReasonRejected ||
		!strings.Contains(aerr.Message, "developers may not terminate workflows") {
		t.Errorf("a developer's Terminate through actions.Request: %v, want PermissionDenied/Rejected with the policy's message", err)
	}
}
