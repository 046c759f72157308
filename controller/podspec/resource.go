package podspec

import (
	"fmt"

	"github.com/argoproj/argo-workflows/v3/pkg/apis/workflow"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// A resource template's pod runs argoexec itself as main: it applies the
// manifest with the pod's service account, evaluates the success and failure
// conditions, and reports output parameters through the task result, so it
// needs no wait container unless logs are archived.

// isResource reports whether the template runs argoexec's resource command.
func isResource(tmpl *wfv1.Template) bool {
	return tmpl.GetType() == wfv1.TemplateTypeResource
}

// withOwnedManifest makes the workflow the controlling owner of the object
// the manifest creates, as argo does for setOwnerReference, so the object is
// garbage-collected with the workflow. The manifest must be one object with a
// kind (decoding it as unstructured checks that), so setOwnerReference does
// not combine with manifestFrom, as in argo.
func withOwnedManifest(wf *wfv1.Workflow, tmpl *wfv1.Template) error {
	res := tmpl.Resource
	if res == nil || !res.SetOwnerReference {
		return nil
	}
	obj := unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(res.Manifest), &obj); err != nil {
		return fmt.Errorf("template %s: reading resource.manifest to set its owner reference: %w", tmpl.Name, err)
	}
	owner := metav1.NewControllerRef(wf, wfv1.SchemeGroupVersion.WithKind(workflow.WorkflowKind))
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), *owner))
	manifest, err := yaml.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("template %s: writing resource.manifest with its owner reference: %w", tmpl.Name, err)
	}
	res.Manifest = string(manifest)
	return nil
}

// resourceMainContainer runs `argoexec resource <action>`; the manifest,
// flags and conditions reach argoexec through ARGO_TEMPLATE.
func (b *builder) resourceMainContainer() corev1.Container {
	ctr := b.executorContainer(common.MainContainerName, "resource")
	ctr.Command = append([]string{"argoexec", "resource", b.tmpl.Resource.Action}, executorLogOptions...)
	return ctr
}

// resourceSecurityContext is argo's lock-down of resource pods' executor
// containers. Only main gets a read-only root: init and wait write outside
// their volumes (argo issue #10787).
func resourceSecurityContext(containerName string) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		Privileged:               ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(int64(8737)),
		AllowPrivilegeEscalation: ptr.To(false),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if containerName != common.InitContainerName && containerName != common.WaitContainerName {
		sc.ReadOnlyRootFilesystem = ptr.To(true)
	}
	return sc
}
