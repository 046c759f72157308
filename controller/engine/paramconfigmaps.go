package engine

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// noParameterConfigMaps is the store of an engine given none: every ConfigMap is missing, so a parameter
// that reads one fails (or takes its default) instead of keeping its {{…}} placeholder.
type noParameterConfigMaps struct{}

func (noParameterConfigMaps) GetByKey(string) (any, bool, error) { return nil, false, nil }

// configMapGlobals are the workflow parameters whose value comes from a ConfigMap (valueFrom.configMapKeyRef),
// read as argo reads them: from ConfigMaps labelled workflows.argoproj.io/configmap-type=Parameter, the
// parameter's default when that fails, else an error naming the parameter, ConfigMap and key.
func configMapGlobals(store common.ConfigMapStore, wf *wfv1.Workflow) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range wf.Spec.Arguments.Parameters {
		if p.Value != nil || p.ValueFrom == nil || p.ValueFrom.ConfigMapKeyRef == nil {
			continue
		}
		ref := p.ValueFrom.ConfigMapKeyRef
		v, err := common.GetConfigMapValue(store, wf.Namespace, ref.Name, ref.Key)
		switch {
		case err == nil:
			out["workflow.parameters."+p.Name] = v
		case p.ValueFrom.Default != nil:
			out["workflow.parameters."+p.Name] = p.ValueFrom.Default.String()
		default:
			return nil, fmt.Errorf("failed to set global parameter %s from configmap with name %s and key %s: %w", p.Name, ref.Name, ref.Key, err)
		}
	}
	return out, nil
}
