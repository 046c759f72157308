package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/controller/podspec"
	"github.com/wfguard/wfguard/internal/apierror"
)

// ConfigMapSource reads the ConfigMap an artifact repository reference names. It may answer from a cache
// unless fresh is set: a cache's NotFound can trail a ConfigMap created a moment ago.
type ConfigMapSource interface {
	ConfigMap(ctx context.Context, namespace, name string, fresh bool) (*corev1.ConfigMap, error)
}

const (
	// DefaultArtifactRepositoriesConfigMap is the ConfigMap argo reads when a reference names none.
	DefaultArtifactRepositoriesConfigMap = "artifact-repositories"
	// AnnotationDefaultArtifactRepository names the ConfigMap's key used when a reference names none.
	AnnotationDefaultArtifactRepository = "workflows.argoproj.io/default-artifact-repository"
)

// errNoRepository is a ConfigMap or key that is not there: the resolution goes on to the next candidate.
var errNoRepository = errors.New("no artifact repository")

// resolveArtifactRepository resolves the workflow's artifact repository once, at start, into
// status.artifactRepositoryRef (with the repository itself, as argo stores it), so a ConfigMap edited or
// deleted later does not change a running workflow. spec.artifactRepositoryRef names a ConfigMap
// (default artifact-repositories) and key (default: the ConfigMap's annotated default) in the workflow's
// namespace; without one, the namespace's artifact-repositories ConfigMap is used if it has its default
// key; else the controller ConfigMap's artifactRepository, if any. An error is
// argo's wording, for the workflow's Error message; an API error worth retrying is an *apiError.
func (e *Engine) resolveArtifactRepository(ctx context.Context, p *Pass, fresh bool) error {
	wf := p.WF
	if wf.Status.ArtifactRepositoryRef != nil {
		return nil
	}
	ref := execSpec(wf).ArtifactRepositoryRef // what runs: the merged spec of a workflowTemplateRef
	candidate := &wfv1.ArtifactRepositoryRefStatus{Namespace: wf.Namespace}
	if ref != nil {
		candidate.ArtifactRepositoryRef = wfv1.ArtifactRepositoryRef{ConfigMap: ref.ConfigMap, Key: ref.Key}
	}
	resolved, err := e.readArtifactRepository(ctx, candidate, fresh)
	switch {
	case errors.Is(err, errNoRepository) && ref != nil:
		return fmt.Errorf("failed to resolve artifact repository: failed to find any artifact repository for artifact repository ref %q", ref.String())
	case errors.Is(err, errNoRepository):
		resolved = &wfv1.ArtifactRepositoryRefStatus{Default: true} // the controller's default
		if repo := e.controllerConfig().ArtifactRepository; repo.Get() != nil {
			resolved.ArtifactRepository = repo.DeepCopy()
		}
	case err != nil:
		var api *apiError
		if errors.As(err, &api) {
			return err
		}
		return fmt.Errorf("failed to resolve artifact repository: error getting config map for artifact repository ref %q: %w", candidate.String(), err)
	}
	wf.Status.ArtifactRepositoryRef = resolved
	return nil
}

// readArtifactRepository reads one candidate reference: errNoRepository when its ConfigMap or key is missing.
func (e *Engine) readArtifactRepository(ctx context.Context, ref *wfv1.ArtifactRepositoryRefStatus, fresh bool) (*wfv1.ArtifactRepositoryRefStatus, error) {
	name := ref.GetConfigMapOr(DefaultArtifactRepositoriesConfigMap)
	if e.ConfigMaps == nil {
		return nil, errNoRepository
	}
	cm, err := e.ConfigMaps.ConfigMap(ctx, ref.Namespace, name, fresh)
	switch {
	case apierrors.IsNotFound(err):
		return nil, errNoRepository
	case err != nil && apierror.Transient(err):
		return nil, &apiError{fmt.Errorf("reading artifact repository ConfigMap %s/%s: %w", ref.Namespace, name, err)}
	case err != nil:
		return nil, err
	}
	key := ref.GetKeyOr(cm.Annotations[AnnotationDefaultArtifactRepository])
	value, ok := cm.Data[key]
	if !ok {
		return nil, errNoRepository
	}
	repo := &wfv1.ArtifactRepository{}
	if err := yaml.Unmarshal([]byte(value), repo); err != nil {
		return nil, fmt.Errorf("failed to unmarshall config map key %q for artifact repository ref %q: %w", key, ref.String(), err)
	}
	return &wfv1.ArtifactRepositoryRefStatus{
		Namespace:             ref.Namespace,
		ArtifactRepositoryRef: wfv1.ArtifactRepositoryRef{ConfigMap: name, Key: key},
		ArtifactRepository:    repo,
	}, nil
}

// artifactRepository is the workflow's resolved repository; nil when it has none.
func artifactRepository(wf *wfv1.Workflow) *wfv1.ArtifactRepository {
	if ref := wf.Status.ArtifactRepositoryRef; ref != nil && ref.ArtifactRepository != nil && ref.ArtifactRepository.Get() != nil {
		return ref.ArtifactRepository
	}
	return nil
}

// needingRepository lists the container, containerSet and script templates' output artifacts that have no location
// of their own nor an archiveLocation with one: without a repository argoexec cannot upload them.
func needingRepository(wf *wfv1.Workflow) []string {
	var found []string
	check := func(name string, t *wfv1.Template) {
		runsUserCode := t.GetType() == wfv1.TemplateTypeContainer || t.GetType() == wfv1.TemplateTypeScript || t.GetType() == wfv1.TemplateTypeContainerSet
		if !runsUserCode || t.ArchiveLocation.HasLocation() {
			return
		}
		for _, a := range t.Outputs.Artifacts {
			if !a.HasLocation() {
				found = append(found, fmt.Sprintf("template %s: outputs.artifacts.%s", name, a.Name))
			}
		}
	}
	for i := range wf.Spec.Templates {
		check(wf.Spec.Templates[i].Name, &wf.Spec.Templates[i])
	}
	for key, t := range wf.Status.StoredTemplates {
		check(key, &t)
	}
	sort.Strings(found)
	return found
}

// withArchiveLocation is the template a pod runs with its archiveLocation filled from the workflow's
// artifact repository, as argo does: only when the template has none with a location and an artifact
// lacks a location (or logs are archived). The key is the repository's keyFormat, by default
// {{workflow.name}}/{{pod.name}}, with workflow variables and the pod's name substituted; argoexec uploads
// each output artifact without a key to <key>/<file> (e.g. <name>.tgz) and downloads an input artifact
// given only a key from the repository's bucket.
func withArchiveLocation(p *Pass, tmpl *wfv1.Template, nodeName, nodeID string) (*wfv1.Template, error) {
	if tmpl.ArchiveLocation.HasLocation() {
		return tmpl, nil
	}
	repo := artifactRepository(p.WF)
	archiveLogs := archiveLogs(p.WF, repo, tmpl)
	need := archiveLogs
	for _, a := range tmpl.Inputs.Artifacts {
		need = need || !a.HasLocation()
	}
	for _, a := range tmpl.Outputs.Artifacts {
		need = need || !a.HasLocation()
	}
	if tmpl.Data != nil {
		if a, ok := tmpl.Data.Source.GetArtifactIfNeeded(); ok {
			need = need || !a.HasLocation() // argoexec data completes the source from the archive location
		}
	}
	if !need || repo == nil {
		return tmpl, nil // without a repository argoexec reports that artifact storage is not configured
	}
	loc := repo.ToArtifactLocation()
	loc.ArchiveLogs = &archiveLogs
	data, err := json.Marshal(loc)
	if err != nil {
		return nil, fmt.Errorf("encoding the archive location: %w", err)
	}
	params := p.globals()
	params[common.LocalVarPodName] = podspec.PodName(p.WF.Name, nodeName, tmpl.Name, nodeID)
	replaced, err := template.Replace(string(data), params, true)
	if err != nil {
		return nil, fmt.Errorf("archive location: %w", err)
	}
	if err := template.Validate(replaced, func(tag string) error { return fmt.Errorf("failed to resolve {{%s}}", tag) }); err != nil {
		return nil, err // argo's message, e.g. a keyFormat naming a variable that does not exist
	}
	out := tmpl.DeepCopy()
	out.ArchiveLocation = &wfv1.ArtifactLocation{}
	if err := json.Unmarshal([]byte(replaced), out.ArchiveLocation); err != nil {
		return nil, fmt.Errorf("decoding the archive location: %w", err)
	}
	return out, nil
}

// archiveLogs is argo's precedence: the repository's archiveLogs when on, else the template's
// archiveLocation.archiveLogs, else the workflow's spec.archiveLogs.
func archiveLogs(wf *wfv1.Workflow, repo *wfv1.ArtifactRepository, tmpl *wfv1.Template) bool {
	if repo.IsArchiveLogs() {
		return true
	}
	if tmpl.ArchiveLocation != nil && tmpl.ArchiveLocation.ArchiveLogs != nil {
		return *tmpl.ArchiveLocation.ArchiveLogs
	}
	return wf.Spec.ArchiveLogs != nil && *wf.Spec.ArchiveLogs
}

// noRepositoryMessage says which output artifacts have nowhere to go.
func noRepositoryMessage(wf *wfv1.Workflow, found []string) string {
	return fmt.Sprintf("no artifact repository for output artifacts without a location (%s): set spec.artifactRepositoryRef, "+
		"or create ConfigMap %s in namespace %s with the %s annotation naming its key",
		strings.Join(found, ", "), DefaultArtifactRepositoriesConfigMap, wf.Namespace, AnnotationDefaultArtifactRepository)
}

// startArtifactRepository resolves the artifact repository when the workflow starts; false when the
// workflow was ended instead: the reference does not resolve (Error, argo's message), or output artifacts
// have nowhere to go (Failed, naming them). A transient API error is returned for a retry.
func (e *Engine) startArtifactRepository(ctx context.Context, p *Pass) (bool, error) {
	// What needs a repository is in the spec, not in what resolves: read once.
	needing := e.needingRepository(p)
	var api *apiError
	err := e.resolveArtifactRepository(ctx, p, false)
	if (err != nil && !errors.As(err, &api)) || (err == nil && artifactRepository(p.WF) == nil && len(needing) > 0) {
		// What the cache gave does not resolve, or leaves artifacts nowhere to go: read past it before
		// failing, the ConfigMap may have been created just before the workflow.
		p.WF.Status.ArtifactRepositoryRef = nil
		err = e.resolveArtifactRepository(ctx, p, true)
	}
	if errors.As(err, &api) {
		return false, fmt.Errorf("resolving the artifact repository of %s/%s: %w", p.WF.Namespace, p.WF.Name, err)
	}
	if err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error())
		return false, nil
	}
	if artifactRepository(p.WF) != nil || len(needing) == 0 {
		return true, nil
	}
	defer p.useExecSpec()()
	msg := "invalid spec: " + noRepositoryMessage(p.WF, needing)
	e.completeWorkflow(p, wfv1.WorkflowFailed, msg)
	p.Events = append(p.Events, Event{Warning: true, Reason: ReasonWorkflowInvalid, Message: msg})
	return false, nil
}

// needingRepository is what in the workflow that runs (a workflowTemplateRef's merged spec) needs an
// artifact repository.
func (e *Engine) needingRepository(p *Pass) []string {
	defer p.useExecSpec()()
	return needingRepository(p.WF)
}
