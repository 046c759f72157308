package podspec

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// applyPodSpecPatches applies the workflow's podSpecPatch and then the
// template's, as strategic merge patches, which is how users reach pod fields
// argo has no template field for (terminationGracePeriodSeconds, for one).
func (b *builder) applyPodSpecPatches(pod *corev1.Pod) error {
	var patches []string
	if b.wf.Spec.PodSpecPatch != "" {
		patches = append(patches, b.wf.Spec.PodSpecPatch)
	}
	if b.tmpl.PodSpecPatch != "" {
		patches = append(patches, b.tmpl.PodSpecPatch)
	}
	if len(patches) == 0 {
		return nil
	}
	spec, err := json.Marshal(pod.Spec)
	if err != nil {
		return fmt.Errorf("encoding pod spec to apply podSpecPatch: %w", err)
	}
	for _, patch := range patches {
		if spec, err = applyPodSpecPatch(spec, patch); err != nil {
			return fmt.Errorf("template %s: %w", b.tmpl.Name, err)
		}
	}
	var patched corev1.PodSpec
	if err := json.Unmarshal(spec, &patched); err != nil {
		return fmt.Errorf("decoding pod spec after podSpecPatch: %w", err)
	}
	pod.Spec = patched
	return nil
}

// applyPodSpecPatch accepts YAML (JSON is YAML too) and checks that the patch
// itself decodes as a PodSpec, so a typo fails here rather than silently
// patching nothing.
func applyPodSpecPatch(spec []byte, patchYAML string) ([]byte, error) {
	patch, err := yaml.YAMLToJSON([]byte(patchYAML))
	if err != nil {
		return nil, fmt.Errorf("podSpecPatch is not valid YAML: %w", err)
	}
	if err := json.Unmarshal(patch, &corev1.PodSpec{}); err != nil {
		return nil, fmt.Errorf("podSpecPatch %q is not a pod spec: %w", patchYAML, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(spec, patch, corev1.PodSpec{})
	if err != nil {
		return nil, fmt.Errorf("applying podSpecPatch: %w", err)
	}
	return patched, nil
}
