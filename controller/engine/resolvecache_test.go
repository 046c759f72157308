package engine

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	apiv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

func resolvableTemplate(t *testing.T, doc string) *wfv1.Template {
	t.Helper()
	tmpl := &wfv1.Template{}
	if err := yaml.UnmarshalStrict([]byte(doc), tmpl); err != nil {
		t.Fatal(err)
	}
	return tmpl
}

const dagNamingVariables = `
name: main
inputs: {parameters: [{name: p}]}
dag:
  tasks:
  - {name: a, template: step, arguments: {parameters: [{name: x, value: "{{workflow.name}}-{{inputs.parameters.p}}"}]}}
  - {name: b, template: step, dependencies: [a], arguments: {parameters: [{name: x, value: "{{tasks.a.outputs.parameters.out}}"}]}}
`

// Each resolution, remembered or not, is what argo's ProcessArgs gives for the same inputs, and a hit
// is only taken when nothing it depends on changed.
func TestARememberedResolutionIsArgosForTheSameInputs(t *testing.T) {
	args := wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("one")}}}
	globals := func(name, duration string) common.Parameters {
		return common.Parameters{"workflow.name": name, "workflow.duration": duration, "workflow.parameters.v": "{{inputs.parameters.p}}"}
	}
	e := &Engine{} // its remembered resolutions carry from one step of the table to the next
	for _, tc := range []struct {
		sentence   string
		tmpl       string
		args       wfv1.Arguments
		globals    common.Parameters
		remembered int // entries after this step
	}{
		{"the first resolution is remembered", dagNamingVariables, args, globals("w", "1.0"), 1},
		{"a variable the template does not name changes nothing", dagNamingVariables, args, globals("w", "2.0"), 1},
		{"a named variable's new value is a new entry", dagNamingVariables, args, globals("w2", "2.0"), 2},
		{"new arguments are a new entry", dagNamingVariables, wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("two")}}}, globals("w2", "2.0"), 3},
		{"an expression may read any variable: not remembered", `
name: main
dag: {tasks: [{name: a, template: step, arguments: {parameters: [{name: x, value: "{{=workflow.duration}}"}]}}]}
`, wfv1.Arguments{}, globals("w", "3.0"), 3},
		{"a named variable whose value holds a tag: not remembered", `
name: main
inputs: {parameters: [{name: p}]}
dag: {tasks: [{name: a, template: step, arguments: {parameters: [{name: x, value: "{{workflow.parameters.v}}"}]}}]}
`, args, globals("w", "3.0"), 3},
		{"an input from a ConfigMap: not remembered", `
name: main
inputs: {parameters: [{name: c, valueFrom: {configMapKeyRef: {name: cm, key: k}}}]}
dag: {tasks: [{name: a, template: step}]}
`, wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "c", Value: wfv1.AnyStringPtr("given")}}}, globals("w", "3.0"), 3},
		{"an argument whose value comes from a ConfigMap: not remembered", `
name: main
inputs: {parameters: [{name: p}]}
dag: {tasks: [{name: a, template: step}]}
`, wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "p", ValueFrom: &wfv1.ValueFrom{ConfigMapKeyRef: &apiv1.ConfigMapKeySelector{
			LocalObjectReference: apiv1.LocalObjectReference{Name: "cm"}, Key: "k"}}}}}, globals("w", "3.0"), 3},
		{"a named variable whose value could form a tag with the text beside it: not remembered", `
name: main
dag: {tasks: [{name: a, template: step, arguments: {parameters: [{name: x, value: "{{workflow.parameters.brace}}{b}}"}]}}]}
`, wfv1.Arguments{}, common.Parameters{"workflow.parameters.brace": "{"}, 3},
		{"a pod's template is resolved once: not remembered", `
name: step
inputs: {parameters: [{name: p}]}
container: {image: alpine, command: [echo, "{{inputs.parameters.p}}"]}
`, args, globals("w", "3.0"), 3},
		{"a nested tag: not remembered", `
name: main
dag: {tasks: [{name: a, template: step, arguments: {parameters: [{name: x, value: "{{a.{{workflow.name}}}}"}]}}]}
`, wfv1.Arguments{}, globals("w", "3.0"), 3},
	} {
		tmpl := resolvableTemplate(t, tc.tmpl)
		want, wantErr := common.ProcessArgs(tmpl, &tc.args, tc.globals, nil, false, "ns", noParameterConfigMaps{})
		got, err := e.processArgs(tmpl, tc.args, tc.globals, "ns", noParameterConfigMaps{})
		if (err != nil) != (wantErr != nil) || !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v, %v; argo's ProcessArgs gives %+v, %v", tc.sentence, got, err, want, wantErr)
		}
		if n := e.resolved.cache.Len(); n != tc.remembered {
			t.Errorf("%s: %d resolutions remembered, want %d", tc.sentence, n, tc.remembered)
		}
		if got != nil && got.DAG != nil && len(got.DAG.Tasks) > 0 { // the caller's changes stay its own
			got.DAG.Tasks[0].Name = "changed"
			again, _ := e.processArgs(tmpl, tc.args, tc.globals, "ns", noParameterConfigMaps{})
			if again.DAG.Tasks[0].Name == "changed" {
				t.Errorf("%s: a caller's change to its copy reached the remembered resolution", tc.sentence)
			}
		}
	}
}

func TestAResolutionErrorIsNotRemembered(t *testing.T) {
	e := &Engine{}
	tmpl := resolvableTemplate(t, `
name: main
inputs: {parameters: [{name: required}]}
dag: {tasks: [{name: a, template: step}]}
`)
	for range 2 {
		if _, err := e.processArgs(tmpl, wfv1.Arguments{}, common.Parameters{}, "ns", noParameterConfigMaps{}); err == nil {
			t.Fatal("a missing input resolved")
		}
	}
	if e.resolved.cache != nil && e.resolved.cache.Len() != 0 {
		t.Errorf("%d failed resolutions remembered", e.resolved.cache.Len())
	}
}
