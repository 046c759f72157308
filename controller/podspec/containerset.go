package podspec

import (
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// mainContainers are the containers the user's template runs: one main, or each container of a
// containerSet under its own name, as argo runs them side by side in one pod.
func (b *builder) mainContainers() ([]corev1.Container, error) {
	var ctrs []corev1.Container
	if b.tmpl.ContainerSet != nil {
		ctrs = containerSetContainers(b.tmpl.ContainerSet)
	} else {
		ctrs = []corev1.Container{b.mainContainer()}
	}
	if b.in.MainContainer == nil {
		return ctrs, nil
	}
	for i := range ctrs {
		merged, err := withContainerDefaults(b.in.MainContainer, ctrs[i])
		if err != nil {
			return nil, fmt.Errorf("merging the controller's mainContainer defaults into %s: %w", describeContainer(&ctrs[i]), err)
		}
		ctrs[i] = merged
	}
	return ctrs, nil
}

// withContainerDefaults merges ctr over defaults with Kubernetes' strategic merge (ctr's fields win,
// lists merge by their keys), as argo merges the controller's mainContainer.
func withContainerDefaults(defaults *corev1.Container, ctr corev1.Container) (corev1.Container, error) {
	base, err := json.Marshal(defaults)
	if err != nil {
		return ctr, err
	}
	own, err := json.Marshal(ctr)
	if err != nil {
		return ctr, err
	}
	mergedJSON, err := strategicpatch.StrategicMergePatch(base, own, corev1.Container{})
	if err != nil {
		return ctr, err
	}
	var merged corev1.Container
	if err := json.Unmarshal(mergedJSON, &merged); err != nil {
		return ctr, err
	}
	return merged, nil
}

// containerSetContainers are the set's containers in its order, each mounting the set's shared
// volumeMounts after its own (argo's GetContainers); an unnamed one is main, as argo names it.
func containerSetContainers(set *wfv1.ContainerSetTemplate) []corev1.Container {
	var out []corev1.Container
	for _, node := range set.GetGraph() {
		ctr := *node.Container.DeepCopy()
		ctr.VolumeMounts = append(ctr.VolumeMounts, set.VolumeMounts...)
		if ctr.Name == "" {
			ctr.Name = common.MainContainerName
		}
		out = append(out, ctr)
	}
	return out
}

// defaultContainerName is what kubectl logs and exec pick: main when the pod has one, else the last of a
// containerSet's containers (argo's rule, decided before sidecars are added).
func defaultContainerName(tmpl *wfv1.Template) string {
	if tmpl.ContainerSet == nil || tmpl.ContainerSet.HasContainerNamed(common.MainContainerName) {
		return common.MainContainerName
	}
	containers := tmpl.ContainerSet.GetGraph()
	if len(containers) == 0 {
		return common.MainContainerName
	}
	return containers[len(containers)-1].Name
}

// validateContainerSet rejects a set that would give a pod without a user container or two containers
// of one name; argo's validation refuses both before a pod is built.
func validateContainerSet(tmpl *wfv1.Template) error {
	set := tmpl.ContainerSet
	if len(set.Containers) == 0 {
		return fmt.Errorf("template %s: containerSet has no containers", tmpl.Name)
	}
	seen := map[string]bool{common.WaitContainerName: true, common.InitContainerName: true}
	for _, c := range containerSetContainers(set) {
		if seen[c.Name] {
			return fmt.Errorf("template %s: containerSet container name %q is used twice or is reserved for argoexec", tmpl.Name, c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}
