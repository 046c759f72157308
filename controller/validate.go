package controller

import (
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/templateresolution"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
)

// argoValidation serializes argo's validator: it keeps a package-level counter without a lock (a data race
// under -race when workers validate at once), and argo's own controller validates from one goroutine.
var argoValidation sync.Mutex

// ArgoValidator validates a workflow spec with argo's own rules (unknown or missing templates, cyclic
// DAGs, unresolvable {{...}} references, ...), so users get the messages they know from argo.
func ArgoValidator(client versioned.Interface) func(*wfv1.Workflow) error {
	return func(wf *wfv1.Workflow) error {
		argoValidation.Lock()
		defer argoValidation.Unlock()
		wftmpl := templateresolution.WrapWorkflowTemplateInterface(client.ArgoprojV1alpha1().WorkflowTemplates(wf.Namespace))
		cwftmpl := templateresolution.WrapClusterWorkflowTemplateInterface(client.ArgoprojV1alpha1().ClusterWorkflowTemplates())
		return validate.ValidateWorkflow(wftmpl, cwftmpl, wf, nil, validate.ValidateOpts{})
	}
}
