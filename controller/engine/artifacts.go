package engine

import (
	"errors"
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// artifactResolver resolves an artifact's `from` ({{steps.X.outputs.artifacts.A}}, {{tasks.X...}},
// {{inputs.artifacts.A}}, {{workflow.outputs.artifacts.A}}) to the artifact it names, as argo does: the producer node's recorded artifact
// (its location as the executor reported it), so the consumer's pod downloads it from there.
type artifactResolver struct {
	p      *Pass
	sc     scope          // the steps or DAG template's scope: node IDs of its fulfilled steps or tasks
	inputs *wfv1.Template // the steps or DAG template, its input artifacts already resolved
}

// errUnresolved is argo's wording for a reference to an artifact that is not there; only this error lets
// an optional output artifact be left out.
var errUnresolved = errors.New("Unable to resolve") //nolint:staticcheck // ST1005: argo's message

// lookup finds the artifact a `from` names; the error is argo's wording.
func (r artifactResolver) lookup(from string) (*wfv1.Artifact, error) {
	tag := strings.TrimSpace(from)
	if strings.HasPrefix(tag, "{{") && strings.HasSuffix(tag, "}}") {
		tag = strings.TrimSpace(tag[2 : len(tag)-2])
	}
	notFound := fmt.Errorf("%w: %q", errUnresolved, tag)
	if name, ok := strings.CutPrefix(tag, "inputs.artifacts."); ok {
		if r.inputs != nil {
			if a := r.inputs.Inputs.GetArtifactByName(name); a != nil && a.HasLocationOrKey() {
				return a.DeepCopy(), nil
			}
		}
		return nil, notFound
	}
	if name, ok := strings.CutPrefix(tag, "workflow.outputs.artifacts."); ok {
		if a := globalOutputArtifact(r.p.WF, name); a != nil {
			return a, nil
		}
		return nil, notFound
	}
	prefix, name, ok := strings.Cut(tag, ".outputs.artifacts.")
	if !ok || !(strings.HasPrefix(prefix, "steps.") || strings.HasPrefix(prefix, "tasks.")) {
		return nil, notFound
	}
	id, ok := r.sc[prefix+".id"]
	if !ok {
		return nil, notFound
	}
	n := r.p.nodeByID(id)
	if n == nil || n.Outputs == nil {
		return nil, notFound
	}
	a := n.Outputs.GetArtifactByName(name)
	if a == nil {
		return nil, notFound
	}
	return a.DeepCopy(), nil
}

// resolve is one artifact with its `from` (or `fromExpression`) replaced by the named artifact (keeping
// the name and appending subPath to its key, as argo does); nil when it has neither.
func (r artifactResolver) resolve(art *wfv1.Artifact) (*wfv1.Artifact, error) {
	var found *wfv1.Artifact
	var err error
	switch {
	case art.FromExpression != "":
		found, err = r.evaluate(art)
	case art.From != "":
		found, err = r.lookup(art.From)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	found.Name = art.Name
	if art.SubPath != "" {
		if err := found.AppendToKey(art.SubPath); err != nil && !art.Optional {
			return nil, fmt.Errorf("artifact %s: subPath %s: %w", art.Name, art.SubPath, err)
		}
	}
	return found, nil
}

// arguments resolves the `from` of a step's or task's argument artifacts. An optional one that does not
// resolve is dropped (its input then stays unset), as argo does.
func (r artifactResolver) arguments(args []wfv1.Artifact) ([]wfv1.Artifact, error) {
	if len(args) == 0 {
		return args, nil
	}
	out := make([]wfv1.Artifact, 0, len(args))
	for i := range args {
		art := &args[i]
		resolved, err := r.resolve(art)
		switch {
		case err != nil && art.Optional:
			continue
		case err != nil:
			return nil, err
		case resolved == nil:
			out = append(out, *art)
		default:
			out = append(out, *resolved)
		}
	}
	return out, nil
}

// outputs resolves a steps or DAG template's outputs.artifacts from its scope; an artifact without
// `from` has nothing to resolve and is left out, as argo does.
func (r artifactResolver) outputs(tmpl *wfv1.Template) ([]wfv1.Artifact, error) {
	out := []wfv1.Artifact{}
	for i := range tmpl.Outputs.Artifacts {
		art := &tmpl.Outputs.Artifacts[i]
		resolved, err := r.resolve(art)
		switch {
		case err != nil && art.Optional && errors.Is(err, errUnresolved):
			continue // argo excuses an optional artifact that is not there, not a bad expression
		case err != nil:
			return nil, fmt.Errorf("unable to resolve outputs from scope: %s", err) // argo's message
		case resolved != nil:
			out = append(out, *resolved)
		}
	}
	return out, nil
}

// resolveStepArtifacts resolves a step's or task's argument artifacts unless it will not run: like argo,
// a `when` that is false skips the resolution (a `when` that cannot be evaluated yet, in a loop, does not).
func resolveStepArtifacts(r artifactResolver, when string, loops bool, args *wfv1.Arguments) error {
	if len(args.Artifacts) == 0 {
		return nil
	}
	proceed, err := evalWhen(when)
	if err != nil && !loops {
		return nil // the `when` error is reported where the step or task is started
	}
	if err == nil && !proceed {
		return nil
	}
	arts, err := r.arguments(args.Artifacts)
	if err != nil {
		return err
	}
	args.Artifacts = arts
	return nil
}
