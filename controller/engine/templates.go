package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// TemplateSource reads the WorkflowTemplates and ClusterWorkflowTemplates that templateRef and
// workflowTemplateRef name. The engine stores every template it uses in the workflow's status (argo's
// status.storedTemplates and status.storedWorkflowTemplateSpec), so each is read once per workflow, and a
// template edited or deleted mid-run does not change a running workflow's nodes.
type TemplateSource interface {
	WorkflowTemplate(ctx context.Context, namespace, name string) (*wfv1.WorkflowTemplate, error)
	ClusterWorkflowTemplate(ctx context.Context, name string) (*wfv1.ClusterWorkflowTemplate, error)
}

// templateBase is where a template name is looked up: the workflow itself (the zero value), a
// WorkflowTemplate (namespaced) or a ClusterWorkflowTemplate (cluster), as argo's template scopes.
type templateBase struct {
	scope wfv1.ResourceScope
	name  string
}

func (b templateBase) local() bool { return b.scope == "" || b.scope == wfv1.ResourceScopeLocal }

// scopeString is argo's NodeStatus.TemplateScope: "local/WORKFLOW", "namespaced/NAME", "cluster/NAME".
func (b templateBase) scopeString(wfName string) string {
	if b.local() {
		return string(wfv1.ResourceScopeLocal) + "/" + wfName
	}
	return string(b.scope) + "/" + b.name
}

func refBase(ref *wfv1.TemplateRef) templateBase {
	if ref.ClusterScope {
		return templateBase{wfv1.ResourceScopeCluster, ref.Name}
	}
	return templateBase{wfv1.ResourceScopeNamespaced, ref.Name}
}

// parseScope reads a node's TemplateScope back; anything unknown is the workflow itself.
func parseScope(s string) templateBase {
	scope, name, _ := strings.Cut(s, "/")
	switch wfv1.ResourceScope(scope) {
	case wfv1.ResourceScopeNamespaced, wfv1.ResourceScopeCluster:
		return templateBase{wfv1.ResourceScope(scope), name}
	}
	return templateBase{}
}

// templateCall is how a step, task, hook or the entrypoint names its template: a name in the caller's
// base, or a templateRef.
type templateCall struct {
	name string
	ref  *wfv1.TemplateRef
	// inline is a step's or task's own template (inline:), which has no name: its node records none.
	inline *wfv1.Template
}

// templateName is what a node created for the call records as its templateName.
func (c templateCall) templateName() string {
	if c.ref != nil {
		return c.ref.Template
	}
	return c.name
}

// stampRef records the templateRef a node was created through, as argo's node does.
func (e *Engine) stampRef(p *Pass, n *wfv1.NodeStatus, call templateCall) {
	if call.ref == nil || n.TemplateRef != nil {
		return
	}
	n.TemplateRef = call.ref.DeepCopy()
	p.setNode(n)
}

func (c templateCall) String() string {
	if c.ref != nil {
		return c.ref.Name + "/" + c.ref.Template
	}
	return c.name
}

// target is the base the called template's own template names resolve in.
func (c templateCall) target(caller templateBase) templateBase {
	if c.ref != nil {
		return refBase(c.ref)
	}
	return caller
}

// storedKey is argo's key in status.storedTemplates; "" for a workflow's own template (never stored).
func storedKey(caller templateBase, name string, ref *wfv1.TemplateRef) string {
	if ref != nil {
		return fmt.Sprintf("%s/%s/%s", refBase(ref).scope, ref.Name, ref.Template)
	}
	if caller.local() {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s", caller.scope, caller.name, name)
}

// localTemplate is one of the workflow's own templates, from the spec it runs (the stored merged spec of
// a workflowTemplateRef).
//
// It points into the spec, as argo's GetTemplateByName does not (it copies the template, the largest
// allocation of a pass after the node lookups): callers copy before they change it, as resolveTemplate does.
func localTemplate(wf *wfv1.Workflow, name string) *wfv1.Template {
	templates := wf.Spec.Templates
	if s := wf.Status.StoredWorkflowSpec; s != nil {
		templates = s.Templates
	}
	for i := range templates {
		if templates[i].Name == name {
			return &templates[i]
		}
	}
	return nil
}

// templateOf is the template a node was created from, without any I/O: every template a node was
// created from is the workflow's own or stored. Nil when it cannot be found.
func (p *Pass) templateOf(n *wfv1.NodeStatus) *wfv1.Template {
	t := p.declaredTemplateOf(n)
	if withDefaults, err := withTemplateDefaults(execSpec(p.WF), t); err == nil {
		return withDefaults
	}
	return t // the node was errored with the merge's error when it was run
}

// declaredTemplateOf is the template a node was created from as declared, without templateDefaults.
func (p *Pass) declaredTemplateOf(n *wfv1.NodeStatus) *wfv1.Template {
	if n.TemplateName == "" && n.TemplateRef == nil {
		return p.inlineTemplateOf(n)
	}
	caller := parseScope(n.TemplateScope)
	key := storedKey(caller, n.TemplateName, n.TemplateRef)
	if key == "" {
		return localTemplate(p.WF, n.TemplateName)
	}
	if t, ok := p.WF.Status.StoredTemplates[key]; ok {
		return &t
	}
	return nil
}

// childBase is where the template names of a steps or DAG node's children resolve.
func childBase(n *wfv1.NodeStatus) templateBase {
	if n.TemplateRef != nil {
		return refBase(n.TemplateRef)
	}
	return parseScope(n.TemplateScope)
}

// enter makes b the base of new nodes and lookups until the returned func restores the previous one.
func (p *Pass) enter(b templateBase) func() {
	prev := p.base
	p.base = b
	return func() { p.base = prev }
}

// resolveTemplate finds the template a call names from the current base: the workflow's own, a stored
// one, or (first use) one read from its WorkflowTemplate or ClusterWorkflowTemplate and stored. A
// missing template or WorkflowTemplate is an error naming it; a failed read is an *apiError (retried).
func (e *Engine) resolveTemplate(ctx context.Context, p *Pass, call templateCall) (*wfv1.Template, error) {
	if call.inline != nil {
		return call.inline.DeepCopy(), nil
	}
	key := storedKey(p.base, call.name, call.ref)
	if key == "" {
		t := localTemplate(p.WF, call.name)
		if t == nil {
			return nil, fmt.Errorf("template %q not found", call.name)
		}
		// Like argo, the workflow's spec.podMetadata is merged into each of its own templates when resolved,
		// so ARGO_TEMPLATE carries it and it wins over the template's own metadata.
		if md := execSpec(p.WF).PodMetadata; md != nil {
			t = t.DeepCopy() // the spec's own template stays as submitted
			addPodMetadata(t, md)
		}
		return t, nil
	}
	if t, ok := p.WF.Status.StoredTemplates[key]; ok {
		return &t, nil
	}
	base, name := p.base, call.name
	if call.ref != nil {
		base, name = refBase(call.ref), call.ref.Template
	}
	holder, err := e.templateHolder(ctx, p, base)
	if err != nil {
		return nil, err
	}
	found := holder.GetTemplateByName(name)
	if found == nil {
		return nil, fmt.Errorf("template %s not found in workflow template %s", name, base.name) // argo's message
	}
	t := found.DeepCopy()
	addPodMetadata(t, holder.GetPodMetadata())
	if unsupported := unsupportedInTemplate(t); len(unsupported) > 0 {
		return nil, fmt.Errorf("template %s of %s %s: not supported by wfguard yet: %s", name, base.scope, base.name, strings.Join(unsupported, "; "))
	}
	if p.WF.Status.StoredTemplates == nil {
		p.WF.Status.StoredTemplates = map[string]wfv1.Template{}
	}
	p.WF.Status.StoredTemplates[key] = *t
	return t, nil
}

// templateHolder reads a WorkflowTemplate or ClusterWorkflowTemplate once per pass.
func (e *Engine) templateHolder(ctx context.Context, p *Pass, b templateBase) (wfv1.TemplateHolder, error) {
	key := string(b.scope) + "/" + b.name
	if h, ok := p.holders[key]; ok {
		return h, nil
	}
	if e.Templates == nil {
		return nil, fmt.Errorf("cannot read %s workflow template %s: no template source is configured", b.scope, b.name)
	}
	var h wfv1.TemplateHolder
	var err error
	if b.scope == wfv1.ResourceScopeCluster {
		h, err = e.Templates.ClusterWorkflowTemplate(ctx, b.name)
	} else {
		h, err = e.Templates.WorkflowTemplate(ctx, p.WF.Namespace, b.name)
	}
	switch {
	case apierrors.IsNotFound(err):
		if b.scope == wfv1.ResourceScopeCluster {
			return nil, fmt.Errorf("cluster workflow template %s not found", b.name)
		}
		return nil, fmt.Errorf("workflow template %s not found", b.name) // argo's message
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading %s workflow template %s: %w", b.scope, b.name, err) // RBAC: no retry helps
	case err != nil:
		return nil, &apiError{fmt.Errorf("reading %s workflow template %s: %w", b.scope, b.name, err)}
	}
	if p.holders == nil {
		p.holders = map[string]wfv1.TemplateHolder{}
	}
	p.holders[key] = h
	return h, nil
}

// addPodMetadata merges a WorkflowTemplate's spec.podMetadata into a template taken from it, as argo does.
func addPodMetadata(t *wfv1.Template, m *wfv1.Metadata) {
	if m == nil {
		return
	}
	if t.Metadata.Annotations == nil && len(m.Annotations) > 0 {
		t.Metadata.Annotations = map[string]string{}
	}
	for k, v := range m.Annotations {
		t.Metadata.Annotations[k] = v
	}
	if t.Metadata.Labels == nil && len(m.Labels) > 0 {
		t.Metadata.Labels = map[string]string{}
	}
	for k, v := range m.Labels {
		t.Metadata.Labels[k] = v
	}
}

// storeWorkflowTemplateSpec resolves spec.workflowTemplateRef once, when the workflow starts: the
// referenced spec with the workflow's own fields merged over it is stored in
// status.storedWorkflowTemplateSpec and is what the workflow runs from then on.
func (e *Engine) storeWorkflowTemplateSpec(ctx context.Context, p *Pass) error {
	ref := p.WF.Spec.WorkflowTemplateRef
	if ref == nil || p.WF.Status.StoredWorkflowSpec != nil {
		return nil
	}
	base := templateBase{wfv1.ResourceScopeNamespaced, ref.Name}
	var specOf func() *wfv1.WorkflowSpec
	if e.Templates == nil {
		return fmt.Errorf("cannot read workflow template %s: no template source is configured", ref.Name)
	}
	if ref.ClusterScope {
		base.scope = wfv1.ResourceScopeCluster
		t, err := e.Templates.ClusterWorkflowTemplate(ctx, ref.Name)
		if err != nil {
			return err
		}
		specOf = t.GetWorkflowSpec
	} else {
		t, err := e.Templates.WorkflowTemplate(ctx, p.WF.Namespace, ref.Name)
		if err != nil {
			return err
		}
		specOf = t.GetWorkflowSpec
	}
	merged, err := joinSpec(&p.WF.Spec, specOf())
	if err != nil {
		return fmt.Errorf("merging the spec of %s workflow template %s: %w", base.scope, ref.Name, err)
	}
	if merged, err = withWorkflowDefaults(e.controllerConfig(), p.WF, merged); err != nil {
		return err
	}
	p.WF.Status.StoredWorkflowSpec = merged
	return nil
}

// joinSpec merges a workflow's own spec over its WorkflowTemplate's, as argo does: the workflow's fields
// win, lists merge by their keys (templates and parameters by name, a workflow parameter replacing the
// template's whole), and hooks merge by name.
func joinSpec(own, tmpl *wfv1.WorkflowSpec) (*wfv1.WorkflowSpec, error) {
	base := tmpl.DeepCopy()
	hooks := base.Hooks
	base.Hooks = nil // hooks are a map of structs: merged by name below, not field by field
	baseJSON, err := json.Marshal(wfv1.Workflow{Spec: *base})
	if err != nil {
		return nil, err
	}
	ownJSON, err := json.Marshal(wfv1.Workflow{Spec: *own})
	if err != nil {
		return nil, err
	}
	mergedJSON, err := strategicpatch.StrategicMergePatch(baseJSON, ownJSON, wfv1.Workflow{})
	if err != nil {
		return nil, err
	}
	var merged wfv1.Workflow
	if err := json.Unmarshal(mergedJSON, &merged); err != nil {
		return nil, err
	}
	spec := &merged.Spec
	for name, hook := range hooks {
		if _, ok := spec.Hooks[name]; !ok {
			if spec.Hooks == nil {
				spec.Hooks = wfv1.LifecycleHooks{}
			}
			spec.Hooks[name] = hook
		}
	}
	spec.Suspend = own.Suspend
	ownParams := map[string]wfv1.Parameter{}
	for _, param := range own.Arguments.Parameters {
		ownParams[param.Name] = param
	}
	tmplParams := map[string]wfv1.Parameter{}
	for _, param := range tmpl.Arguments.Parameters {
		tmplParams[param.Name] = param
	}
	for i, param := range spec.Arguments.Parameters {
		if o, ok := ownParams[param.Name]; ok {
			spec.Arguments.Parameters[i] = *o.DeepCopy()
		} else if t, ok := tmplParams[param.Name]; ok {
			spec.Arguments.Parameters[i] = *t.DeepCopy()
		}
	}
	return spec, nil
}

// execSpec is the spec the workflow runs: the stored merged spec of a workflowTemplateRef, else its own.
func execSpec(wf *wfv1.Workflow) *wfv1.WorkflowSpec {
	if s := wf.Status.StoredWorkflowSpec; s != nil {
		return s
	}
	return &wf.Spec
}

// useExecSpec makes p.WF.Spec the spec the workflow runs while the engine works: with a
// workflowTemplateRef, the stored merged spec, with the live shutdown and suspend of the workflow's own
// spec. The returned func puts the submitted spec back, so it is what gets persisted.
func (p *Pass) useExecSpec() func() {
	stored := p.WF.Status.StoredWorkflowSpec
	if stored == nil {
		return func() {}
	}
	own := p.WF.Spec
	exec := *stored
	exec.Shutdown, exec.Suspend = own.Shutdown, own.Suspend
	p.WF.Spec = exec
	return func() { p.WF.Spec = own }
}

// startTimeout bounds reading a WorkflowTemplate while a workflow starts (the start phase has no context
// of its own).
const startTimeout = 10 * time.Second

// inlineTemplateOf finds the inline template a node runs: its step or task, by name, in the template of
// its boundary (the steps or DAG node it is part of). Nil when the node is not one of a step or task.
func (p *Pass) inlineTemplateOf(n *wfv1.NodeStatus) *wfv1.Template {
	boundary := p.nodeByID(n.BoundaryID)
	if boundary == nil || boundary.ID == n.ID {
		return nil
	}
	parent := p.declaredTemplateOf(boundary)
	if parent == nil {
		return nil
	}
	name := callerName(strings.TrimPrefix(n.Name, boundary.Name))
	for _, group := range parent.Steps {
		for _, step := range group.Steps {
			if step.Name == name {
				return step.Inline
			}
		}
	}
	if parent.DAG != nil {
		for _, task := range parent.DAG.Tasks {
			if task.Name == name {
				return task.Inline
			}
		}
	}
	return nil
}

// callerName is the step or task name in what follows a boundary's node name: "[1].a(0)" of a step,
// ".a(0:x)" of a task; argo's names of steps and tasks hold neither dots nor parentheses.
func callerName(rest string) string {
	if strings.HasPrefix(rest, "[") {
		_, rest, _ = strings.Cut(rest, "]")
	}
	rest = strings.TrimPrefix(rest, ".")
	if i := strings.IndexAny(rest, ".("); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
