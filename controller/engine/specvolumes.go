package engine

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-workflows/v3/util/template"
)

// unsetInSpecSubstitution are the {{workflow.*}} variables argo only knows once it has looked at the workflow's
// progress; argo substitutes the spec before it sets them, so a volume naming one keeps its placeholder.
var unsetInSpecSubstitution = []string{"workflow.status", "workflow.failures", "workflow.duration"}

// useSubstitutedVolumes makes p.WF.Spec's volumes and volumeClaimTemplates carry the workflow's global
// variables ({{workflow.name}}, {{workflow.parameters.x}}, ...) while the engine works, as argo substitutes
// them before it creates claims and pods; unknown placeholders stay as written. The returned func puts the
// written ones back, so they are what gets persisted.
func (p *Pass) useSubstitutedVolumes() (func(), error) {
	spec := &p.WF.Spec
	if len(spec.Volumes) == 0 && len(spec.VolumeClaimTemplates) == 0 {
		return func() {}, nil
	}
	globals := p.globals()
	for _, k := range unsetInSpecSubstitution {
		delete(globals, k)
	}
	volumes, err := substituteJSON(spec.Volumes, globals)
	if err != nil {
		return nil, fmt.Errorf("substituting global variables in spec.volumes: %w", err)
	}
	claims, err := substituteJSON(spec.VolumeClaimTemplates, globals)
	if err != nil {
		return nil, fmt.Errorf("substituting global variables in spec.volumeClaimTemplates: %w", err)
	}
	own, ownClaims := spec.Volumes, spec.VolumeClaimTemplates
	spec.Volumes, spec.VolumeClaimTemplates = volumes, claims
	return func() { spec.Volumes, spec.VolumeClaimTemplates = own, ownClaims }, nil
}

func substituteJSON[T any](v []T, params map[string]string) ([]T, error) {
	if len(v) == 0 {
		return v, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out, err := template.Replace(string(data), params, true)
	if err != nil {
		return nil, err
	}
	var replaced []T
	if err := json.Unmarshal([]byte(out), &replaced); err != nil {
		return nil, err
	}
	return replaced, nil
}
