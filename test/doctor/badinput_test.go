package doctor_test

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/doctor"
	"github.com/wfguard/wfguard/inspect"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/controlplanetest"
)

func TestAnAuditorMissingSomePermissionsGetsOneLinePerSkippedCheckAndTheRestRuns(t *testing.T) {
	e := newEnv(t, true)
	var partial []want
	for _, sc := range scenarios {
		if strings.HasPrefix(sc.name, "a node Succeeded without") {
			partial = sc.build(e)
		}
	}
	// The auditor may list pods, workflows and task results in this namespace, nothing else.
	_, err := e.kube.RbacV1().Roles(e.ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "auditor"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
			{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows", "workflowtaskresults"}, Verbs: []string{"list"}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.kube.RbacV1().RoleBindings(e.ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "auditor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "auditor"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "auditor"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	auditor := cp.Config()
	auditor.Impersonate = rest.ImpersonationConfig{UserName: "auditor"}
	if err := controlplanetest.WaitAuthorized(t.Context(), auditor,
		authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: e.ns},
		authorizationv1.ResourceAttributes{Verb: "list", Group: "argoproj.io", Resource: "workflowtaskresults", Namespace: e.ns}); err != nil {
		t.Fatal(err)
	}
	// A running workflow gives the RBAC check an account to ask about.
	for _, sc := range scenarios {
		if strings.HasPrefix(sc.name, "a healthy running workflow") {
			sc.build(e)
		}
	}

	report := doctor.Audit(t.Context(), impersonating(t, "auditor"), doctor.Options{Namespace: e.ns, Now: e.now()})
	wantSkipped := []string{
		doctor.CheckStaleAction + ": cannot list workflowactions in namespace " + e.ns + ": forbidden",
		doctor.CheckExecutorRBAC + ": cannot create subjectaccessreviews: forbidden",
		doctor.CheckWorkflowCRD + ": cannot get customresourcedefinition workflows.argoproj.io: forbidden",
	}
	if got := skipped(report); !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped:\n got %q\nwant %q", got, wantSkipped)
	}
	if got := found(report); !slices.Equal(got, sortWants(partial)) {
		t.Errorf("the checks that could run found %v, want %v", got, partial)
	}
	if code := doctor.ExitCode(doctor.Result{Report: report}); code != doctor.ExitProblems {
		t.Errorf("exit code %d, want %d", code, doctor.ExitProblems)
	}
}

func TestAClusterWithoutArgosCRDsGetsOneLinePerCheck(t *testing.T) {
	bare, err := controlplane.Start(t.Context(), controlplane.Options{CRDDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := bare.Stop(); err != nil {
			t.Error(err)
		}
	}()
	clients, err := inspect.NewClients(bare.Config())
	if err != nil {
		t.Fatal(err)
	}
	report := doctor.Audit(t.Context(), clients, doctor.Options{Namespace: "default"})
	notServed := func(resource string) string {
		return "cannot list " + resource + " in namespace default: the resource is not served (is its CRD installed? kubectl apply -k config/crd)"
	}
	wantSkipped := []string{
		doctor.CheckPartialSuccess + ": " + notServed("workflows"),
		doctor.CheckIncompleteResult + ": " + notServed("workflowtaskresults"),
		doctor.CheckIncompleteResult + ": " + notServed("workflows"),
		doctor.CheckFinalizerHeld + ": " + notServed("workflows"),
		doctor.CheckStaleAction + ": " + notServed("workflowactions"),
		doctor.CheckNotReconciled + ": " + notServed("workflows"),
		doctor.CheckExecutorRBAC + ": " + notServed("workflows"),
	}
	if got := skipped(report); !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped:\n got %q\nwant %q", got, wantSkipped)
	}
	want := []want{{doctor.CheckWorkflowCRD, "customresourcedefinition/workflows.argoproj.io", ""}}
	if got := found(report); !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func TestAWorkflowCRDThatWouldPruneWfguardsStatusFieldsIsFound(t *testing.T) {
	e := newEnv(t, true)
	crds := e.clients.Dynamic.Resource(crdResource)
	original, err := crds.Get(t.Context(), "workflows.argoproj.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Put the shared control plane's CRD back for the other tests.
		ctx := context.Background() // the test's context is already canceled here
		current, err := crds.Get(ctx, "workflows.argoproj.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		original.SetResourceVersion(current.GetResourceVersion())
		if _, err := crds.Update(ctx, original, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	// A strict status schema, as some hand-edited installs have: argo's own fields only.
	pruning := original.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(pruning.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	if err := unstructured.SetNestedField(v, map[string]any{"type": "object", "properties": map[string]any{
		"phase": map[string]any{"type": "string"}, "nodes": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
	}, "schema", "openAPIV3Schema", "properties", "status"); err != nil {
		t.Fatal(err)
	}
	versions[0] = v
	if err := unstructured.SetNestedSlice(pruning.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Update(t.Context(), pruning, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	report := e.audit()
	want := []want{{doctor.CheckWorkflowCRD, "customresourcedefinition/workflows.argoproj.io", ""}}
	if got := found(report); !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
	msg := report.Checks[len(report.Checks)-1].Findings[0].Message
	if !strings.Contains(msg, "would prune [status.shutdown status.shutdownMessage status.suspended status.appliedActions status.resultWaits status.retryCleanupSince]") {
		t.Errorf("message %q", msg)
	}
}

// scrub replaces what varies between runs (namespace, UIDs, times, durations) in doctor's output.
func scrub(out, ns string) string {
	out = strings.ReplaceAll(out, ns, "NS")
	out = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).ReplaceAllString(out, "UID")
	out = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(out, "TIME")
	return regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+s\b`).ReplaceAllString(out, "DUR")
}

func TestDoctorsHumanReportListsEveryProblemWithItsAgeAndRepair(t *testing.T) {
	e := newEnv(t, true)
	for _, sc := range scenarios {
		sc.build(e)
	}
	report := e.audit()
	result := doctor.Result{Report: report, DryRun: true, Fix: doctor.Fix(t.Context(), e.clients, report, false, e.now())}
	var out bytes.Buffer
	if err := doctor.WriteHuman(&out, result); err != nil {
		t.Fatal(err)
	}
	golden(t, "doctor-dry-run.golden", []byte(scrub(out.String(), e.ns)))
	if code := doctor.ExitCode(result); code != doctor.ExitProblems {
		t.Errorf("exit code %d, want %d", code, doctor.ExitProblems)
	}
}
