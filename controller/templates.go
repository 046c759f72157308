package controller

import (
	"context"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// templateSource reads WorkflowTemplates and ClusterWorkflowTemplates for the engine with a GET. No
// informer: the engine stores each template it uses in the workflow's status, so a template is read once
// per workflow (and a GET sees a template created just before its workflow).
type templateSource struct{ argo versioned.Interface }

func (s templateSource) WorkflowTemplate(ctx context.Context, namespace, name string) (*wfv1.WorkflowTemplate, error) {
	return s.argo.ArgoprojV1alpha1().WorkflowTemplates(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s templateSource) ClusterWorkflowTemplate(ctx context.Context, name string) (*wfv1.ClusterWorkflowTemplate, error) {
	return s.argo.ArgoprojV1alpha1().ClusterWorkflowTemplates().Get(ctx, name, metav1.GetOptions{})
}
