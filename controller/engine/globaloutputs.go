package engine

import (
	"reflect"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// publishGlobalOutputs records the outputs of a node that carry a globalName as the workflow's own
// outputs (status.outputs), named by that globalName, as argo does; {{workflow.outputs.parameters.NAME}}
// and {{workflow.outputs.artifacts.NAME}} read them. A later value for the same name replaces the earlier.
func publishGlobalOutputs(wf *wfv1.Workflow, outputs *wfv1.Outputs) {
	if outputs == nil {
		return
	}
	for _, param := range outputs.Parameters {
		if param.GlobalName != "" {
			setGlobalParam(wf, wfv1.Parameter{Name: param.GlobalName, Value: param.Value})
		}
	}
	for _, art := range outputs.Artifacts {
		if art.GlobalName == "" {
			continue
		}
		global := *art.DeepCopy()
		// Argo keeps the location only: the producer's path means nothing to a consumer.
		global.Name, global.GlobalName, global.Path = art.GlobalName, "", ""
		setGlobalArtifact(wf, global)
	}
}

func setGlobalParam(wf *wfv1.Workflow, param wfv1.Parameter) {
	if wf.Status.Outputs == nil {
		wf.Status.Outputs = &wfv1.Outputs{}
	}
	for i := range wf.Status.Outputs.Parameters {
		existing := &wf.Status.Outputs.Parameters[i]
		if existing.Name == param.Name {
			if param.Value != nil {
				existing.Value = param.Value
			}
			return
		}
	}
	wf.Status.Outputs.Parameters = append(wf.Status.Outputs.Parameters, param)
}

func setGlobalArtifact(wf *wfv1.Workflow, art wfv1.Artifact) {
	if wf.Status.Outputs == nil {
		wf.Status.Outputs = &wfv1.Outputs{}
	}
	for i := range wf.Status.Outputs.Artifacts {
		if wf.Status.Outputs.Artifacts[i].Name == art.Name {
			if !reflect.DeepEqual(wf.Status.Outputs.Artifacts[i], art) {
				wf.Status.Outputs.Artifacts[i] = art
			}
			return
		}
	}
	wf.Status.Outputs.Artifacts = append(wf.Status.Outputs.Artifacts, art)
}

// globalOutputParams are the {{workflow.outputs.parameters.NAME}} variables of the outputs published so far.
func globalOutputParams(wf *wfv1.Workflow, into map[string]string) {
	if wf.Status.Outputs == nil {
		return
	}
	for _, p := range wf.Status.Outputs.Parameters {
		if p.Value != nil {
			into["workflow.outputs.parameters."+p.Name] = p.Value.String()
		}
	}
}

// globalOutputArtifact is the published artifact {{workflow.outputs.artifacts.NAME}} names, if any.
func globalOutputArtifact(wf *wfv1.Workflow, name string) *wfv1.Artifact {
	if wf.Status.Outputs == nil {
		return nil
	}
	if a := wf.Status.Outputs.GetArtifactByName(name); a != nil {
		return a.DeepCopy()
	}
	return nil
}
