package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"sigs.k8s.io/yaml"
)

func TestTemplatesWfguardDoesNotRunAreRefusedAtStart(t *testing.T) {
	for _, tc := range []struct{ sentence, template, want string }{
		{"an http template, which argo runs in its agent pod", `http: {url: "https://example.com"}`,
			"not supported by wfguard yet: template t: http template (argo runs it in its agent pod, which wfguard does not run)"},
		{"a plugin template", `plugin: {hello: {}}`,
			"not supported by wfguard yet: template t: plugin template"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte("spec:\n  entrypoint: t\n  templates:\n  - name: t\n    "+tc.template+"\n"), wf); err != nil {
				t.Fatal(err)
			}
			if err := unsupported(wf); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCustomMetricsAndPodDisruptionBudgetsAreNoLongerRefused(t *testing.T) {
	for _, tc := range []struct{ sentence, field, template string }{
		{"workflow custom metrics", `metrics: {prometheus: [{name: m, help: h, gauge: {value: "1"}}]}`, ""},
		{"template custom metrics", "", `metrics: {prometheus: [{name: m, help: h, counter: {value: "1"}}]}, `},
		{"a PodDisruptionBudget", `podDisruptionBudget: {minAvailable: 1}`, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			manifest := "spec:\n  entrypoint: t\n  " + tc.field + "\n  templates:\n  - {name: t, " + tc.template + "container: {image: alpine, command: [\"true\"]}}\n"
			if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
				t.Fatal(err)
			}
			if err := unsupported(wf); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}
