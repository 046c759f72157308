package engine

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
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
