package podspec

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// mainContainers are the containers the user's template runs: one main, or each container of a
// containerSet under its own name, as argo runs them side by side in one pod.
func (b *builder) mainContainers() []corev1.Container {
	if b.tmpl.ContainerSet == nil {
		return []corev1.Container{b.mainContainer()}
	}
	return containerSetContainers(b.tmpl.ContainerSet)
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
