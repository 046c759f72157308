package podspec

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/argoproj/argo-workflows/v3/workflow/common"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	_ "github.com/wfguard/wfguard/exprlimits" // bounds what every expression's functions may cost (docs/engine.md)
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
		if patch, err = b.substitutePatch(patch, pod.Name); err != nil {
			return fmt.Errorf("template %s: %w", b.tmpl.Name, err)
		}
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

// substitutePatch resolves {{workflow.*}} and {{pod.name}} in a podSpecPatch before it is applied, as
// argo does: a patch setting a limit from a workflow parameter is not a valid pod spec until then. The
// patch is substituted as a JSON string, so a value with quotes or newlines stays one string.
func (b *builder) substitutePatch(patch, podName string) (string, error) {
	params := map[string]string{common.LocalVarPodName: podName}
	for k, v := range b.in.Globals {
		params[k] = v
	}
	quoted, err := json.Marshal(patch)
	if err != nil {
		return "", fmt.Errorf("encoding podSpecPatch: %w", err)
	}
	replaced, err := template.Replace(string(quoted), params, true)
	if err != nil {
		return "", fmt.Errorf("substituting the podSpecPatch variables: %w", err)
	}
	var out string
	if err := json.Unmarshal([]byte(replaced), &out); err != nil {
		return "", fmt.Errorf("decoding podSpecPatch after substitution: %w", err)
	}
	return out, nil
}
