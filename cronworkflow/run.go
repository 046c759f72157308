package cronworkflow

import (
	"fmt"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/apis/workflow"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// propagatedLabels are the CronWorkflow labels its runs inherit (argo's list: who created it).
var propagatedLabels = []string{
	"workflows.argoproj.io/creator",
	"workflows.argoproj.io/creator-email",
	"workflows.argoproj.io/creator-preferred-username",
}

// runName is argo's name of the run scheduled at t: the same for every controller, so creating it twice
// fails with AlreadyExists instead of starting it twice.
func runName(cronName string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cronName, scheduled.Unix())
}

// newRun is the Workflow the CronWorkflow starts for the time scheduled, as argo builds it.
func newRun(cwf *wfv1.CronWorkflow, scheduled time.Time) *wfv1.Workflow {
	labels := map[string]string{}
	for _, k := range propagatedLabels {
		if v, ok := cwf.Labels[k]; ok {
			labels[k] = v
		}
	}
	if id, ok := cwf.Labels[common.LabelKeyControllerInstanceID]; ok {
		labels[common.LabelKeyControllerInstanceID] = id
	}
	labels[common.LabelKeyCronWorkflow] = cwf.Name
	annotations := map[string]string{common.AnnotationKeyCronWfScheduledTime: scheduled.Format(time.RFC3339)}
	var finalizers []string
	if md := cwf.Spec.WorkflowMetadata; md != nil {
		for k, v := range md.Labels {
			labels[k] = v
		}
		for k, v := range md.Annotations {
			annotations[k] = v
		}
		finalizers = append(finalizers, md.Finalizers...)
	}
	owner := metav1.NewControllerRef(cwf, wfv1.SchemeGroupVersion.WithKind(workflow.CronWorkflowKind))
	return &wfv1.Workflow{
		TypeMeta: metav1.TypeMeta{Kind: workflow.WorkflowKind, APIVersion: wfv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name: runName(cwf.Name, scheduled), Namespace: cwf.Namespace, Labels: labels, Annotations: annotations,
			Finalizers: finalizers, OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: *cwf.Spec.WorkflowSpec.DeepCopy(),
	}
}

// ownedBy reports whether wf is a run of the CronWorkflow with that UID (its controller owner reference).
func ownedBy(wf *wfv1.Workflow, cwf *wfv1.CronWorkflow) bool {
	owner := metav1.GetControllerOf(wf)
	return owner != nil && owner.Kind == workflow.CronWorkflowKind && owner.UID == cwf.UID
}
