package podspec

import (
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// A data template's pod runs argoexec itself as main (`argoexec data <data as JSON>`): it lists the
// source's artifact paths, applies the transformation and reports the result through the task result, so
// it needs no wait container. Its source artifact's credentials are mounted into main, which reads them.

// isData reports whether the template runs argoexec's data command.
func isData(tmpl *wfv1.Template) bool {
	return tmpl.GetType() == wfv1.TemplateTypeData
}

// runsExecutorAsMain reports whether main is argoexec itself (resource and data templates).
func runsExecutorAsMain(tmpl *wfv1.Template) bool {
	return isResource(tmpl) || isData(tmpl)
}

// dataMainContainer runs `argoexec data <data>`; like a user's main it is wrapped by the emissary later.
func (b *builder) dataMainContainer() (corev1.Container, error) {
	data, err := json.Marshal(b.tmpl.Data)
	if err != nil {
		return corev1.Container{}, fmt.Errorf("template %s: encoding data for argoexec: %w", b.tmpl.Name, err)
	}
	ctr := b.executorContainer(common.MainContainerName, "data")
	ctr.Command = append([]string{"argoexec", "data", string(data)}, executorLogOptions...)
	return ctr, nil
}

// dataSourceLocation is the location of a data template's source artifact, nil for other templates.
func dataSourceLocation(tmpl *wfv1.Template) *wfv1.ArtifactLocation {
	if tmpl.Data == nil {
		return nil
	}
	if art, ok := tmpl.Data.Source.GetArtifactIfNeeded(); ok {
		return &art.ArtifactLocation
	}
	return nil
}
