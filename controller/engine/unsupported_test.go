package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"sigs.k8s.io/yaml"
)

func TestAContainerSetTemplateIsRefusedAtStart(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
spec:
  entrypoint: group
  templates:
  - name: group
    containerSet: {containers: [{name: main, image: alpine, command: ["true"]}]}
`), wf); err != nil {
		t.Fatal(err)
	}
	err := unsupported(wf)
	if err == nil || !strings.Contains(err.Error(), "not supported by wfguard yet: template group: containerSet") {
		t.Errorf("a containerSet template: err = %v", err)
	}
}
