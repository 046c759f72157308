package controller

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/templateresolution"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
)

// ArgoValidator validates a workflow spec with argo's own rules (unknown or missing templates, cyclic
// DAGs, unresolvable {{...}} references, ...), so users get the messages they know from argo.
func ArgoValidator(client versioned.Interface) func(*wfv1.Workflow) error {
	return func(wf *wfv1.Workflow) error {
		wftmpl := templateresolution.WrapWorkflowTemplateInterface(client.ArgoprojV1alpha1().WorkflowTemplates(wf.Namespace))
		cwftmpl := templateresolution.WrapClusterWorkflowTemplateInterface(client.ArgoprojV1alpha1().ClusterWorkflowTemplates())
		return validate.ValidateWorkflow(wftmpl, cwftmpl, wf, nil, validate.ValidateOpts{})
	}
}
