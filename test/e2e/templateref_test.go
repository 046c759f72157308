package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// createTemplate creates a WorkflowTemplate (namespaced) or ClusterWorkflowTemplate from YAML; a cluster
// one is deleted when the test ends.
func (e *env) createTemplate(manifest string, cluster bool) {
	e.t.Helper()
	if cluster {
		cwt := &wfv1.ClusterWorkflowTemplate{}
		if err := yaml.UnmarshalStrict([]byte(manifest), cwt); err != nil {
			e.t.Fatalf("parsing cluster workflow template: %v", err)
		}
		client := e.Argo.ArgoprojV1alpha1().ClusterWorkflowTemplates()
		if _, err := client.Create(e.t.Context(), cwt, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("creating cluster workflow template: %v", err)
		}
		e.t.Cleanup(func() { _ = client.Delete(context.Background(), cwt.Name, metav1.DeleteOptions{}) })
		return
	}
	wt := &wfv1.WorkflowTemplate{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wt); err != nil {
		e.t.Fatalf("parsing workflow template: %v", err)
	}
	if _, err := e.Argo.ArgoprojV1alpha1().WorkflowTemplates(e.Namespace).Create(e.t.Context(), wt, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating workflow template: %v", err)
	}
}

func TestStepsAndTasksRunTemplatesOfWorkflowTemplatesAndClusterWorkflowTemplates(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	cluster := "lib-" + e.Namespace // cluster-scoped: unique per test namespace
	e.createTemplate(`
metadata: {name: lib}
spec:
  podMetadata: {labels: {from-lib: "yes"}}
  templates:
  - name: pipeline
    inputs: {parameters: [{name: who}]}
    steps:
    - - {name: greet, template: greet, arguments: {parameters: [{name: who, value: "{{inputs.parameters.who}}"}]}}
    outputs: {parameters: [{name: said, valueFrom: {parameter: "{{steps.greet.outputs.parameters.said}}"}}]}
  - name: greet
    inputs: {parameters: [{name: who}]}
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"said": "hello {{inputs.parameters.who}}"}'}}
    container: {image: alpine, command: [echo, "hello {{inputs.parameters.who}}"]}
    outputs: {parameters: [{name: said, valueFrom: {path: /tmp/said}}]}
`, false)
	e.createTemplate(`
metadata: {name: `+cluster+`}
spec:
  templates:
  - name: shout
    inputs: {parameters: [{name: text}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.text}}!"]}
`, true)
	wf := e.Submit(`
metadata: {name: refs}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: lib, templateRef: {name: lib, template: pipeline}, arguments: {parameters: [{name: who, value: world}]}}
      - name: shout
        depends: lib
        templateRef: {name: ` + cluster + `, template: shout, clusterScope: true}
        arguments: {parameters: [{name: text, value: "{{tasks.lib.outputs.parameters.said}}"}]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
	}
	assertNodes(t, done, map[string]nodeSummary{
		"refs":              {wfv1.NodeTypeDAG, wfv1.NodeSucceeded, ""},
		"refs.lib":          {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
		"refs.lib[0]":       {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
		"refs.lib[0].greet": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
		"refs.shout":        {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
	})
	// Argo's node shape: the templateRef on the node reached through it, the caller's scope, and the
	// WorkflowTemplate's scope for the nodes it runs itself.
	for _, tc := range []struct {
		node, scope string
		ref         *wfv1.TemplateRef
	}{
		{"refs.lib", "local/refs", &wfv1.TemplateRef{Name: "lib", Template: "pipeline"}},
		{"refs.lib[0].greet", "namespaced/lib", nil},
		{"refs.shout", "local/refs", &wfv1.TemplateRef{Name: cluster, Template: "shout", ClusterScope: true}},
	} {
		n := harness.NodeByName(done, tc.node)
		if n.TemplateScope != tc.scope || !equalRef(n.TemplateRef, tc.ref) {
			t.Errorf("node %s: templateScope %q templateRef %+v, want %q %+v", tc.node, n.TemplateScope, n.TemplateRef, tc.scope, tc.ref)
		}
	}
	if got := outputParam(harness.NodeByName(done, "refs.lib"), "said"); got != "hello world" {
		t.Errorf("the WorkflowTemplate's steps output %q, want %q", got, "hello world")
	}
	if args := mainArgs(e.PodOf(done, "refs.shout")); !slices.Contains(args, "hello world!") {
		t.Errorf("the ClusterWorkflowTemplate's pod argv %q lacks the passed parameter", args)
	}
	if pod := e.PodOf(done, "refs.lib[0].greet"); pod.Labels["from-lib"] != "yes" {
		t.Errorf("the WorkflowTemplate's podMetadata is missing from its pod: %v", pod.Labels)
	}
	var stored []string
	for k := range done.Status.StoredTemplates {
		stored = append(stored, k)
	}
	slices.Sort(stored)
	want := []string{"cluster/" + cluster + "/shout", "namespaced/lib/greet", "namespaced/lib/pipeline"}
	if !slices.Equal(stored, want) {
		t.Errorf("status.storedTemplates = %v, want %v", stored, want)
	}
}

func equalRef(a, b *wfv1.TemplateRef) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func TestAWorkflowTemplateRefRunsTheTemplatesSpecWithTheWorkflowsArguments(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	cluster := "whole-" + e.Namespace
	spec := `
spec:
  entrypoint: main
  arguments: {parameters: [{name: msg, value: from-template}, {name: other, value: kept}]}
  onExit: bye
  templates:
  - name: main
    steps: [[{name: say, template: say}]]
  - name: say
    container: {image: alpine, command: [echo, "{{workflow.parameters.msg}}", "{{workflow.parameters.other}}"]}
  - name: bye
    container: {image: alpine, command: [echo, "{{workflow.status}}"]}
`
	e.createTemplate("metadata: {name: whole}"+spec, false)
	e.createTemplate("metadata: {name: "+cluster+"}"+spec, true)
	for _, tc := range []struct {
		sentence, name, ref string
	}{
		{"a WorkflowTemplate", "by-ref", "{name: whole}"},
		{"a ClusterWorkflowTemplate", "by-cluster-ref", "{name: " + cluster + ", clusterScope: true}"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  workflowTemplateRef: ` + tc.ref + `
  arguments: {parameters: [{name: msg, value: from-workflow}]}
`)
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("workflow = %s %q\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
			}
			assertNodes(t, done, map[string]nodeSummary{
				tc.name:             {wfv1.NodeTypeSteps, wfv1.NodeSucceeded, ""},
				tc.name + "[0]":     {wfv1.NodeTypeStepGroup, wfv1.NodeSucceeded, ""},
				tc.name + "[0].say": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
				tc.name + ".onExit": {wfv1.NodeTypePod, wfv1.NodeSucceeded, ""},
			})
			if args := mainArgs(e.PodOf(done, tc.name+"[0].say")); !slices.Contains(args, "from-workflow") || !slices.Contains(args, "kept") {
				t.Errorf("argv %q: want the workflow's msg and the template's other parameter", args)
			}
			if s := done.Status.StoredWorkflowSpec; s == nil || len(s.Templates) != 3 || s.Entrypoint != "main" {
				t.Errorf("status.storedWorkflowTemplateSpec = %+v, want the merged spec", s)
			}
			if len(done.Spec.Templates) != 0 || done.Spec.Entrypoint != "" {
				t.Errorf("the workflow's own spec was rewritten: %+v", done.Spec)
			}
		})
	}
}

func TestAMissingWorkflowTemplateFailsOnlyItsWorkflowNamingIt(t *testing.T) {
	release := make(chan struct{})
	annotations := simnode.AnnotationScript(simnode.Behavior{}, t.Logf)
	e := newEnv(t, envOptions{script: simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		b := annotations.Func(info)
		if info.Template.Name == "gate" {
			b.Hold = release
		}
		return b
	}}})
	e.createTemplate(`
metadata: {name: doomed}
spec:
  templates:
  - {name: work, container: {image: alpine, command: ["true"]}}
`, false)
	e.createTemplate(`
metadata: {name: steady}
spec:
  templates:
  - {name: work, container: {image: alpine, command: ["true"]}}
`, false)
	t.Run("a workflowTemplateRef to a missing template errors the workflow with argo's message", func(t *testing.T) {
		e := e.withT(t)
		wf := e.Submit(`
metadata: {name: no-such-template}
spec:
  workflowTemplateRef: {name: nope}
`)
		done := e.WaitCompleted(wf.Name)
		if want := `workflowtemplates.argoproj.io "nope" not found`; done.Status.Phase != wfv1.WorkflowError || done.Status.Message != want {
			t.Errorf("workflow = %s %q, want Error %q", done.Status.Phase, done.Status.Message, want)
		}
	})
	t.Run("a templateRef to a missing template fails argo's validation", func(t *testing.T) {
		e := e.withT(t)
		wf := e.Submit(`
metadata: {name: no-such-ref}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, templateRef: {name: steady, template: absent}}]]
`)
		done := e.WaitCompleted(wf.Name)
		if done.Status.Phase != wfv1.WorkflowFailed || !strings.HasPrefix(done.Status.Message, "invalid spec: ") || !strings.Contains(done.Status.Message, "absent") {
			t.Errorf("workflow = %s %q, want Failed, invalid spec naming the template", done.Status.Phase, done.Status.Message)
		}
	})
	t.Run("a WorkflowTemplate named at run time and deleted before its step runs errors that step, naming it", func(t *testing.T) {
		// Argo's validation stores every template a workflow names statically when it starts, so deleting
		// their WorkflowTemplate later changes nothing; a templateRef computed at run time is read when used.
		e := e.withT(t)
		const uses = `
spec:
  entrypoint: main
  arguments: {parameters: [{name: lib, value: %s}]}
  templates:
  - name: main
    steps:
    - - {name: gate, template: gate}
    - - {name: use, templateRef: {name: "{{steps.gate.outputs.parameters.lib}}", template: work}}
  - name: gate
    metadata: {annotations: {simnode.wfguard.io/parameters: '{"lib": "{{workflow.parameters.lib}}"}'}}
    container: {image: alpine, command: ["true"]}
    outputs: {parameters: [{name: lib, valueFrom: {path: /tmp/lib}}]}
`
		victim := e.Submit("metadata: {name: victim}" + fmt.Sprintf(uses, "doomed"))
		bystander := e.Submit("metadata: {name: bystander}" + fmt.Sprintf(uses, "steady"))
		for _, wf := range []string{victim.Name, bystander.Name} {
			e.WaitFor(wf, "at its gate", 30*time.Second, func(wf *wfv1.Workflow) bool { return harness.NodeByName(wf, wf.Name+"[0].gate") != nil })
		}
		if err := e.Argo.ArgoprojV1alpha1().WorkflowTemplates(e.Namespace).Delete(e.t.Context(), "doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		close(release)
		done := e.WaitCompleted(victim.Name)
		msg := "workflow template doomed not found"
		if want := "step group deemed errored due to child victim[1].use error: " + msg; done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != want {
			t.Errorf("workflow = %s %q, want Failed %q", done.Status.Phase, done.Status.Message, want)
		}
		if use := harness.NodeByName(done, "victim[1].use"); use == nil || use.Phase != wfv1.NodeError || use.Message != msg {
			t.Errorf("the step using the deleted template = %+v, want Error %q", use, msg)
		}
		if other := e.WaitCompleted(bystander.Name); other.Status.Phase != wfv1.WorkflowSucceeded {
			t.Errorf("a workflow using another template was affected: %s %q\n%s", other.Status.Phase, other.Status.Message, harness.Describe(other))
		}
	})
}

func TestAReferencedTemplateUsingAFeatureWfguardDoesNotRunIsRejectedAtStart(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createTemplate(`
metadata: {name: fetcher}
spec:
  templates:
  - {name: fetch, http: {url: "https://example.com"}}
`, false)
	wf := e.Submit(`
metadata: {name: uses-http}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: fetch, templateRef: {name: fetcher, template: fetch}}]]
`)
	done := e.WaitCompleted(wf.Name)
	want := "invalid spec: not supported by wfguard yet: template namespaced/fetcher/fetch: http template (argo runs it in its agent pod, which wfguard does not run)"
	if done.Status.Phase != wfv1.WorkflowFailed || done.Status.Message != want {
		t.Errorf("workflow = %s %q, want Failed %q", done.Status.Phase, done.Status.Message, want)
	}
	if len(done.Status.Nodes) != 0 {
		t.Errorf("a rejected workflow has nodes:\n%s", harness.Describe(done))
	}
}
