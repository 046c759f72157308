package engine

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestATemplatesDisplayNameAnnotationNamesItsNode(t *testing.T) {
	for _, tc := range []struct {
		sentence, annotation, want, err string
	}{
		{"without the annotation the step's name stays", "", "test-linux(0:image:debian)", ""},
		{"the substituted annotation replaces it", "os-debian-9.1", "os-debian-9.1", ""},
		{"a name with spaces is argo's error", "os debian", "test-linux(0:image:debian)",
			"displayName must match the regex ^[a-zA-Z0-9][a-zA-Z0-9-.]{0,61}[a-zA-Z0-9]$"},
	} {
		tmpl := &wfv1.Template{}
		if tc.annotation != "" {
			tmpl.Annotations = map[string]string{string(wfv1.TemplateAnnotationDisplayName): tc.annotation}
		}
		got, err := annotatedDisplayName(tmpl, "test-linux(0:image:debian)")
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: got %q, %v; want %q, %q", tc.sentence, got, err, tc.want, tc.err)
		}
	}
}

func TestTheDisplayNameAnnotationRenamesARetryNodeButNotItsAttempts(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: dn, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: s, template: work, arguments: {parameters: [{name: os, value: debian}]}}
  - name: work
    annotations: {workflows.argoproj.io/display-name: "os-{{inputs.parameters.os}}"}
    inputs: {parameters: [{name: os}]}
    retryStrategy: {limit: 1}
    container: {image: alpine, command: ["true"]}
`), wf); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Pods: &recordingPods{created: map[string]*corev1.Pod{}}}
	runPass(t, e, wf, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	for name, want := range map[string]string{"dn[0].s": "os-debian", "dn[0].s(0)": "s(0)"} {
		if n := p0(wf, name); n == nil || n.DisplayName != want {
			t.Errorf("node %s: %+v, want display name %q", name, n, want)
		}
	}
}
