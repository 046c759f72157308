package interop

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Every scenario's Workflow manifest parses strictly and names templates that exist, so a run's failures are
// the controllers', not the suite's.
func TestEveryScenarioManifestIsAWorkflowWhoseTemplatesExist(t *testing.T) {
	for _, s := range Scenarios {
		for name, text := range s.Files {
			text = strings.ReplaceAll(text, "{p}", "x")
			if !strings.Contains(text, "kind: Workflow\n") {
				continue
			}
			var wf wfv1.Workflow
			if err := yaml.UnmarshalStrict([]byte(text), &wf); err != nil {
				t.Errorf("%s/%s: %v", s.Name, name, err)
				continue
			}
			for _, tmpl := range wf.Spec.Templates {
				for _, group := range tmpl.Steps {
					for _, step := range group.Steps {
						if wf.GetTemplateByName(step.Template) == nil {
							t.Errorf("%s/%s: step %s names a missing template %q", s.Name, name, step.Name, step.Template)
						}
					}
				}
			}
			if wf.GetTemplateByName(wf.Spec.Entrypoint) == nil {
				t.Errorf("%s/%s: no entrypoint template %q", s.Name, name, wf.Spec.Entrypoint)
			}
		}
	}
}
