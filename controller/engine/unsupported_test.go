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
		{"template metrics, which wfguard does not emit", `metrics: {prometheus: [{name: m, help: h, counter: {value: "1"}}]}
    container: {image: alpine, command: ["true"]}`,
			"not supported by wfguard yet: template t: metrics (custom Prometheus metrics)"},
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

func TestWorkflowLevelFieldsWfguardDoesNotHonourAreRefusedAtStart(t *testing.T) {
	for _, tc := range []struct{ sentence, field, want string }{
		{"custom metrics", `metrics: {prometheus: [{name: m, help: h, gauge: {value: "1"}}]}`, "spec.metrics (custom Prometheus metrics)"},
		{"a PodDisruptionBudget", `podDisruptionBudget: {minAvailable: 1}`, "spec.podDisruptionBudget"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte("spec:\n  entrypoint: t\n  "+tc.field+"\n  templates:\n  - {name: t, container: {image: alpine, command: [\"true\"]}}\n"), wf); err != nil {
				t.Fatal(err)
			}
			if err := unsupported(wf); err == nil || !strings.Contains(err.Error(), "not supported by wfguard yet: "+tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
