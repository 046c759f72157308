package engine

import (
	"fmt"
	"regexp"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// displayNamePattern is what argo accepts as a node display name from a template's annotation.
var displayNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9-.]{0,61}[a-zA-Z0-9]$`)

// annotatedDisplayName is the node's display name: the template's workflows.argoproj.io/display-name
// annotation once its parameters are substituted, as argo shows it, or the step's or task's name otherwise.
// A name argo would refuse is argo's error.
func annotatedDisplayName(resolved *wfv1.Template, fallback string) (string, error) {
	name := resolved.GetDisplayName()
	if name == "" {
		return fallback, nil
	}
	if !displayNamePattern.MatchString(name) {
		return fallback, fmt.Errorf("displayName must match the regex %s", displayNamePattern.String())
	}
	return name, nil
}
