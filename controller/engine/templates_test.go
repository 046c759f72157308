package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
)

// fakeTemplates serves WorkflowTemplates by name (ClusterWorkflowTemplates with prefix "cluster:") and
// counts reads.
type fakeTemplates struct {
	objects map[string]string // name → spec YAML
	err     error
	reads   int
}

func (f *fakeTemplates) get(name string, into any) error {
	f.reads++
	if f.err != nil {
		return f.err
	}
	spec, ok := f.objects[name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "argoproj.io", Resource: "workflowtemplates"}, name)
	}
	return yaml.UnmarshalStrict([]byte(spec), into)
}

func (f *fakeTemplates) WorkflowTemplate(_ context.Context, _, name string) (*wfv1.WorkflowTemplate, error) {
	t := &wfv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return t, f.get(name, &t.Spec)
}

func (f *fakeTemplates) ClusterWorkflowTemplate(_ context.Context, name string) (*wfv1.ClusterWorkflowTemplate, error) {
	t := &wfv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return t, f.get("cluster:"+name, &t.Spec)
}

const libSpec = `
podMetadata: {labels: {team: lib}}
templates:
- {name: work, container: {image: alpine}}
- {name: flow, steps: [[{name: a, template: work}]]}
- {name: serve, http: {url: "http://example.test"}}
`

func TestTemplatesAreResolvedFromTheirBaseAndStoredOnFirstUse(t *testing.T) {
	src := &fakeTemplates{objects: map[string]string{"lib": libSpec, "cluster:shared": libSpec}}
	e := &Engine{Templates: src}
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns"},
		Spec: wfv1.WorkflowSpec{Templates: []wfv1.Template{{Name: "main", Container: nil, Steps: []wfv1.ParallelSteps{}}}}}
	p := &Pass{WF: wf}
	lib := templateBase{wfv1.ResourceScopeNamespaced, "lib"}
	for _, tc := range []struct {
		sentence string
		base     templateBase
		call     templateCall
		want     string // template name, or the error
		stored   string // the status.storedTemplates key it is kept under ("" = not stored)
	}{
		{"a workflow's own template is found locally", templateBase{}, templateCall{name: "main"}, "main", ""},
		{"a missing own template names it", templateBase{}, templateCall{name: "absent"}, `template "absent" not found`, ""},
		{"a templateRef reads the WorkflowTemplate", templateBase{}, templateCall{ref: &wfv1.TemplateRef{Name: "lib", Template: "flow"}}, "flow", "namespaced/lib/flow"},
		{"a name inside a WorkflowTemplate resolves there", lib, templateCall{name: "work"}, "work", "namespaced/lib/work"},
		{"a clusterScope templateRef reads the ClusterWorkflowTemplate", lib, templateCall{ref: &wfv1.TemplateRef{Name: "shared", Template: "work", ClusterScope: true}}, "work", "cluster/shared/work"},
		{"a missing WorkflowTemplate is argo's message", templateBase{}, templateCall{ref: &wfv1.TemplateRef{Name: "gone", Template: "x"}}, "workflow template gone not found", ""},
		{"a missing template in a WorkflowTemplate is argo's message", templateBase{}, templateCall{ref: &wfv1.TemplateRef{Name: "lib", Template: "nope"}}, "template nope not found in workflow template lib", ""},
		{"a referenced template using an unsupported feature is refused", templateBase{}, templateCall{ref: &wfv1.TemplateRef{Name: "lib", Template: "serve"}},
			"template serve of namespaced lib: not supported by wfguard yet: http template (argo runs it in its agent pod, which wfguard does not run)", ""},
	} {
		restore := p.enter(tc.base)
		got, err := e.resolveTemplate(context.Background(), p, tc.call)
		restore()
		switch {
		case err != nil && err.Error() != tc.want:
			t.Errorf("%s: err = %v, want %q", tc.sentence, err, tc.want)
		case err == nil && got.Name != tc.want:
			t.Errorf("%s: got template %q, want %q", tc.sentence, got.Name, tc.want)
		case err == nil && tc.stored != "":
			if _, ok := wf.Status.StoredTemplates[tc.stored]; !ok {
				t.Errorf("%s: not stored under %q (stored: %v)", tc.sentence, tc.stored, wf.Status.StoredTemplates)
			}
			if got.Metadata.Labels["team"] != "lib" {
				t.Errorf("%s: the WorkflowTemplate's podMetadata was not merged: %v", tc.sentence, got.Metadata.Labels)
			}
		}
	}
	if len(wf.Status.StoredTemplates) != 3 {
		t.Errorf("stored %d templates, want 3: %v", len(wf.Status.StoredTemplates), wf.Status.StoredTemplates)
	}
	// A new pass finds stored templates without reading anything.
	reads := src.reads
	p2 := &Pass{WF: wf, base: lib}
	if _, err := e.resolveTemplate(context.Background(), p2, templateCall{name: "work"}); err != nil || src.reads != reads {
		t.Errorf("a stored template was read again (%d reads, err %v)", src.reads-reads, err)
	}
	if n := (&wfv1.NodeStatus{TemplateScope: "namespaced/lib", TemplateName: "work"}); p2.templateOf(n) == nil {
		t.Errorf("templateOf does not find a stored template from the node's scope")
	}
}

func TestAFailedTemplateReadIsRetriedNotFatal(t *testing.T) {
	src := &fakeTemplates{err: apierrors.NewServiceUnavailable("etcd is down")}
	p := &Pass{WF: &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns"}}}
	_, err := (&Engine{Templates: src}).resolveTemplate(context.Background(), p, templateCall{ref: &wfv1.TemplateRef{Name: "lib", Template: "work"}})
	var api *apiError
	if !errors.As(err, &api) || !strings.Contains(err.Error(), "reading namespaced workflow template lib") {
		t.Errorf("err = %v, want a retried API error naming the template", err)
	}
	if len(p.WF.Status.StoredTemplates) != 0 {
		t.Errorf("something was stored after a failed read")
	}
}

func TestAWorkflowsOwnSpecIsMergedOverItsWorkflowTemplates(t *testing.T) {
	var own, tmpl wfv1.WorkflowSpec
	for spec, text := range map[*wfv1.WorkflowSpec]string{
		&own: `
workflowTemplateRef: {name: lib}
arguments: {parameters: [{name: a, value: mine}, {name: c, valueFrom: {configMapKeyRef: {name: cm, key: k}}}]}
hooks: {exit: {template: mine}}
serviceAccountName: me`,
		&tmpl: `
entrypoint: main
arguments: {parameters: [{name: a, value: theirs}, {name: b, value: kept}, {name: c, value: replaced}]}
hooks: {exit: {template: theirs}, running: {template: r}}
serviceAccountName: them
parallelism: 2
templates: [{name: main, container: {image: alpine}}]`,
	} {
		if err := yaml.UnmarshalStrict([]byte(text), spec); err != nil {
			t.Fatal(err)
		}
	}
	merged, err := joinSpec(&own, &tmpl)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{}
	for _, p := range merged.Arguments.Parameters {
		switch {
		case p.Value != nil:
			params[p.Name] = p.Value.String()
		case p.ValueFrom != nil:
			params[p.Name] = "valueFrom"
		}
	}
	for _, tc := range []struct{ sentence, got, want string }{
		{"the workflow's parameter value wins", params["a"], "mine"},
		{"a parameter only the template has is kept", params["b"], "kept"},
		{"a workflow parameter replaces the template's whole (valueFrom, not value)", params["c"], "valueFrom"},
		{"the workflow's scalar fields win", merged.ServiceAccountName, "me"},
		{"the template's other fields are kept", merged.Entrypoint, "main"},
		{"the workflow's exit hook wins", merged.Hooks["exit"].Template, "mine"},
		{"the template's other hooks are kept", merged.Hooks["running"].Template, "r"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.sentence, tc.got, tc.want)
		}
	}
	if merged.Parallelism == nil || *merged.Parallelism != 2 || len(merged.Templates) != 1 {
		t.Errorf("the template's parallelism or templates were lost: %+v", merged)
	}
}

func TestTemplateScopesReadBackAsTheyAreWritten(t *testing.T) {
	for _, b := range []templateBase{{}, {wfv1.ResourceScopeNamespaced, "lib"}, {wfv1.ResourceScopeCluster, "shared"}} {
		s := b.scopeString("wf")
		if got := parseScope(s); got.scopeString("wf") != s {
			t.Errorf("%q reads back as %q", s, got.scopeString("wf"))
		}
	}
	if s := (templateBase{}).scopeString("wf"); s != "local/wf" {
		t.Errorf("a workflow's own scope is %q, want argo's local/wf", s)
	}
}

func TestAMissingWorkflowTemplateErrorsOnlyTheTaskThatNamesIt(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, templateRef: {name: gone, template: work}}
      - {name: b, template: work}
      - {name: after-a, template: work, depends: a}
  - {name: work, container: {image: alpine, command: ["true"]}}
`), wf); err != nil {
		t.Fatal(err)
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods, Templates: &fakeTemplates{}}
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Pods: map[string]*corev1.Pod{}}
	if _, err := e.Start(p); err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	a := p.node("wf.a")
	if want := "task 'wf.a' errored: workflow template gone not found"; a == nil || a.Phase != wfv1.NodeError || a.Message != want {
		t.Errorf("task a = %+v, want Error %q", a, want)
	}
	if a != nil && (a.TemplateRef == nil || a.TemplateRef.Name != "gone") {
		t.Errorf("task a does not record its templateRef: %+v", a.TemplateRef)
	}
	if _, ok := pods.created[wf.NodeID("wf.b")]; !ok {
		t.Errorf("the independent task b did not start")
	}
	if after := p.node("wf.after-a"); after == nil || after.Phase != wfv1.NodeOmitted {
		t.Errorf("the dependent of the errored task = %+v, want Omitted", after)
	}
}

func TestANodesTemplateScopeIsArgos(t *testing.T) {
	ref := &wfv1.WorkflowTemplateRef{Name: "lib"}
	for _, tc := range []struct {
		sentence string
		ref      *wfv1.WorkflowTemplateRef
		base     templateBase
		want     string
	}{
		{"a workflow's own template names the workflow", nil, templateBase{}, "local/wf"},
		{"a workflowTemplateRef's workflow runs an unnamed copy of the stored spec, as argo's execWf", ref, templateBase{}, "local/"},
		{"a templateRef names its WorkflowTemplate in either", ref, templateBase{wfv1.ResourceScopeNamespaced, "lib"}, "namespaced/lib"},
	} {
		p := &Pass{WF: &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "wf"}, Spec: wfv1.WorkflowSpec{WorkflowTemplateRef: tc.ref}}, base: tc.base}
		if got := p.newNode(nodeAt{name: "wf"}, wfv1.NodeTypeSteps, wfv1.NodeRunning, "").TemplateScope; got != tc.want {
			t.Errorf("%s: TemplateScope = %q, want %q", tc.sentence, got, tc.want)
		}
	}
}
