package podspec

import (
	"github.com/argoproj/argo-workflows/v3/pkg/apis/workflow"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// skeleton returns the pod's metadata and the pod-level spec fields that do
// not depend on containers.
func (b *builder) skeleton(deadlineSeconds *int64) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(b.wf.Name, b.in.NodeName, b.tmpl.Name, b.in.NodeID),
			Namespace:       b.wf.Namespace,
			Labels:          b.labels(),
			Annotations:     b.annotations(),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b.wf, wfv1.SchemeGroupVersion.WithKind(workflow.WorkflowKind))},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			Volumes:               append(baseVolumes(), b.tmpl.Volumes...),
			ActiveDeadlineSeconds: deadlineSeconds,
			ImagePullSecrets:      b.wf.Spec.ImagePullSecrets,
			ServiceAccountName:    b.serviceAccountName(),
		},
	}
	if b.in.StatusFinalizer {
		pod.Finalizers = []string{common.FinalizerPodStatus}
	}
	b.addHostAndDNS(pod)
	b.addExecutorToken(pod)
	return pod
}

// labels merges user labels (workflow podMetadata, then template metadata, as
// argo does) and then sets the labels wfguard and argo rely on. Unlike argo,
// the system labels win: a user label must not be able to detach a pod from
// its workflow.
func (b *builder) labels() map[string]string {
	labels := map[string]string{}
	if md := b.wf.Spec.PodMetadata; md != nil {
		copyInto(labels, md.Labels)
	}
	copyInto(labels, b.tmpl.Metadata.Labels)

	labels[common.LabelKeyWorkflow] = b.wf.Name
	labels[common.LabelKeyCompleted] = "false"
	labels[LabelWorkflowUID] = string(b.wf.UID)
	if b.in.InstanceID != "" {
		labels[common.LabelKeyControllerInstanceID] = b.in.InstanceID
	}
	if b.in.OnExit {
		labels[common.LabelKeyOnExit] = "true"
	}
	return labels
}

// annotations follows the same precedence as labels: the node-name and
// node-id annotations map the pod back to its node and must not be overridden.
func (b *builder) annotations() map[string]string {
	annotations := map[string]string{}
	if md := b.wf.Spec.PodMetadata; md != nil {
		copyInto(annotations, md.Annotations)
	}
	copyInto(annotations, b.tmpl.Metadata.Annotations)

	annotations[common.AnnotationKeyNodeName] = b.in.NodeName
	annotations[common.AnnotationKeyNodeID] = b.in.NodeID
	annotations[common.AnnotationKeyDefaultContainer] = defaultContainerName(b.tmpl)
	if b.in.PodGCStrategy != "" {
		annotations[common.AnnotationKeyPodGCStrategy] = b.in.PodGCStrategy
	}
	if b.in.StatusFinalizer {
		annotations[AnnotationStatusFinalizerManaged] = "true"
	}
	return annotations
}

func copyInto(dst, src map[string]string) {
	for k, v := range src {
		dst[k] = v
	}
}

func (b *builder) serviceAccountName() string {
	if b.tmpl.ServiceAccountName != "" {
		return b.tmpl.ServiceAccountName
	}
	return b.wf.Spec.ServiceAccountName
}

// addHostAndDNS copies the workflow-only networking fields; argo has no
// template-level override for them.
func (b *builder) addHostAndDNS(pod *corev1.Pod) {
	if b.wf.Spec.HostNetwork != nil {
		pod.Spec.HostNetwork = *b.wf.Spec.HostNetwork
	}
	if b.wf.Spec.DNSPolicy != nil {
		pod.Spec.DNSPolicy = *b.wf.Spec.DNSPolicy
	}
	pod.Spec.DNSConfig = b.wf.Spec.DNSConfig
}

// addScheduling applies template-over-workflow precedence. Argo also consults
// the boundary (parent steps/DAG) template between the two; callers that want
// that must copy those fields into the template before calling Build.
func (b *builder) addScheduling(pod *corev1.Pod) {
	spec, tmpl := &b.wf.Spec, b.tmpl
	pod.Spec.NodeSelector = firstNonEmptyMap(tmpl.NodeSelector, spec.NodeSelector)
	pod.Spec.Affinity = tmpl.Affinity
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = spec.Affinity
	}
	pod.Spec.Tolerations = tmpl.Tolerations
	if len(pod.Spec.Tolerations) == 0 {
		pod.Spec.Tolerations = spec.Tolerations
	}
	pod.Spec.SchedulerName = firstNonEmpty(tmpl.SchedulerName, spec.SchedulerName)
	pod.Spec.PriorityClassName = firstNonEmpty(tmpl.PriorityClassName, spec.PodPriorityClassName)
	pod.Spec.HostAliases = append(append([]corev1.HostAlias(nil), spec.HostAliases...), tmpl.HostAliases...)
	pod.Spec.SecurityContext = tmpl.SecurityContext
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = spec.SecurityContext
	}
}

func firstNonEmptyMap(maps ...map[string]string) map[string]string {
	for _, m := range maps {
		if len(m) > 0 {
			return m
		}
	}
	return nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
