package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/controllerconfig"
)

// Admission decides whether a new workflow may start now (the controller ConfigMap's parallelism and
// namespaceParallelism); a workflow refused now is asked again when a slot frees.
type Admission interface {
	Admit(wf *wfv1.Workflow) bool
}

// ThrottledMessage is argo's message on a workflow held Pending by parallelism or namespaceParallelism.
const ThrottledMessage = "Workflow processing has been postponed because too many workflows are already running"

// ReferenceModeMessage is argo's error when workflowRestrictions require a workflowTemplateRef.
const ReferenceModeMessage = "workflows must use workflowTemplateRef to be executed when the controller is in reference mode"

// controllerConfig is the controller ConfigMap's config in force (shared: never modified).
func (e *Engine) controllerConfig() *config.Config { return controllerconfig.CurrentOf(e.Config) }

// executorImage is --executor-image when given, else the ConfigMap's executor.image, else argo's image.
func (e *Engine) executorImage(cfg *config.Config) string {
	if e.ExecutorImage != "" {
		return e.ExecutorImage
	}
	if cfg.Executor != nil && cfg.Executor.Image != "" {
		return cfg.Executor.Image
	}
	return podspec.DefaultExecutorImage
}

// admitted reports whether a new (or throttled) workflow may start; one that may not is left Pending
// with argo's message. A workflow being terminated is always admitted, as in argo, so it can end.
func (e *Engine) admitted(p *Pass) bool {
	if e.Admission == nil || shutdown(p) == wfv1.ShutdownStrategyTerminate || e.Admission.Admit(p.WF) {
		return true
	}
	if p.WF.Status.Phase == wfv1.WorkflowUnknown {
		p.WF.Status.Phase = wfv1.WorkflowPending
		p.WF.Status.Message = ThrottledMessage
		setLabel(p.WF, common.LabelKeyPhase, string(wfv1.WorkflowPending))
	}
	return false
}

// throttled reports whether the workflow waits Pending for a parallelism slot (rather than for its locks).
func throttled(wf *wfv1.Workflow) bool {
	return wf.Status.Phase == wfv1.WorkflowPending && wf.Status.Message == ThrottledMessage
}

// checkRestrictions applies workflowRestrictions.templateReferencing: Strict and Secure run only
// workflows that reference a WorkflowTemplate.
func checkRestrictions(cfg *config.Config, wf *wfv1.Workflow) error {
	if cfg.WorkflowRestrictions.MustUseReference() && wf.Spec.WorkflowTemplateRef == nil {
		return fmt.Errorf("%s", ReferenceModeMessage)
	}
	return nil
}

// applyWorkflowDefaults merges the ConfigMap's workflowDefaults under a workflow without a
// workflowTemplateRef, as argo does when it starts one: the workflow's own values win, maps (labels,
// annotations, podMetadata, nodeSelector) merge, lists merge by their keys. The merged spec is persisted
// with the workflow, so a later edit of the ConfigMap does not change a running workflow.
func applyWorkflowDefaults(cfg *config.Config, wf *wfv1.Workflow) error {
	if cfg.WorkflowDefaults == nil || wf.Spec.WorkflowTemplateRef != nil {
		return nil
	}
	if err := mergeDefaultsInto(cfg.WorkflowDefaults, wf); err != nil {
		return fmt.Errorf("merging the controller's workflowDefaults: %w", err)
	}
	return nil
}

// withWorkflowDefaults merges the ConfigMap's workflowDefaults under the joined spec of a
// workflowTemplateRef (workflow, then template, then defaults) and its metadata under the workflow's.
func withWorkflowDefaults(cfg *config.Config, wf *wfv1.Workflow, joined *wfv1.WorkflowSpec) (*wfv1.WorkflowSpec, error) {
	if cfg.WorkflowDefaults == nil {
		return joined, nil
	}
	defaults := cfg.WorkflowDefaults
	wf.Labels = withMissing(wf.Labels, defaults.Labels)
	wf.Annotations = withMissing(wf.Annotations, defaults.Annotations)
	target := &wfv1.Workflow{Spec: *joined}
	if err := mergeDefaultsInto(&wfv1.Workflow{Spec: defaults.Spec}, target); err != nil {
		return nil, fmt.Errorf("merging the controller's workflowDefaults: %w", err)
	}
	return &target.Spec, nil
}

// mergeDefaultsInto merges wf over defaults with Kubernetes' strategic merge, wf's values winning. Hooks
// and labelsFrom are maps of structs that argo merges by key, not field by field.
func mergeDefaultsInto(defaults, wf *wfv1.Workflow) error {
	d := defaults.DeepCopy()
	hooks := d.Spec.Hooks
	d.Spec.Hooks = nil
	var labelsFrom map[string]wfv1.LabelValueFrom
	if d.Spec.WorkflowMetadata != nil {
		labelsFrom = d.Spec.WorkflowMetadata.LabelsFrom
		d.Spec.WorkflowMetadata.LabelsFrom = nil
	}
	base, err := json.Marshal(d)
	if err != nil {
		return err
	}
	own, err := json.Marshal(wf)
	if err != nil {
		return err
	}
	mergedJSON, err := strategicpatch.StrategicMergePatch(base, own, wfv1.Workflow{})
	if err != nil {
		return err
	}
	var merged wfv1.Workflow
	if err := json.Unmarshal(mergedJSON, &merged); err != nil {
		return err
	}
	for name, hook := range hooks {
		if _, ok := merged.Spec.Hooks[name]; !ok {
			if merged.Spec.Hooks == nil {
				merged.Spec.Hooks = wfv1.LifecycleHooks{}
			}
			merged.Spec.Hooks[name] = hook
		}
	}
	for key, v := range labelsFrom {
		if merged.Spec.WorkflowMetadata == nil {
			merged.Spec.WorkflowMetadata = &wfv1.WorkflowMetadata{}
		}
		if _, ok := merged.Spec.WorkflowMetadata.LabelsFrom[key]; !ok {
			if merged.Spec.WorkflowMetadata.LabelsFrom == nil {
				merged.Spec.WorkflowMetadata.LabelsFrom = map[string]wfv1.LabelValueFrom{}
			}
			merged.Spec.WorkflowMetadata.LabelsFrom[key] = v
		}
	}
	*wf = merged
	return nil
}

// withMissing adds to m the entries of defaults whose keys m lacks.
func withMissing(m, defaults map[string]string) map[string]string {
	for k, v := range defaults {
		if _, ok := m[k]; ok {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m
}

// IsNodeEvent reports whether an Event reason is about one node (argo's WorkflowNode* reasons), which the
// controller config's nodeEvents.enabled: false turns off.
func IsNodeEvent(reason string) bool { return strings.HasPrefix(reason, "WorkflowNode") }
