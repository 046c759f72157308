package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"k8s.io/utils/lru"
)

// resolvedTemplateEntries bounds the remembered resolutions: a few per running steps or DAG template.
const resolvedTemplateEntries = 4096

// resolvedTemplates remembers argo's ProcessArgs results by what they depend on. Every pass resolves each
// running steps or DAG template again (the JSON round trips of argument substitution were 8% of the
// controller's CPU in the throughput bench); the result changes only with the template, its arguments and
// the variables it names.
type resolvedTemplates struct {
	once  sync.Once
	cache *lru.Cache
}

// processArgs is common.ProcessArgs(tmpl, &args, globals, nil, false, namespace, configMaps), remembered.
// The caller may change the template it gets.
func (e *Engine) processArgs(tmpl *wfv1.Template, args wfv1.Arguments, globals common.Parameters, namespace string, configMaps common.ConfigMapStore) (*wfv1.Template, error) {
	key, ok := resolutionKey(tmpl, args, globals, namespace)
	if !ok {
		return common.ProcessArgs(tmpl, &args, globals, nil, false, namespace, configMaps)
	}
	r := &e.resolved
	r.once.Do(func() { r.cache = lru.New(resolvedTemplateEntries) })
	if v, hit := r.cache.Get(key); hit {
		return v.(*wfv1.Template).DeepCopy(), nil
	}
	resolved, err := common.ProcessArgs(tmpl, &args, globals, nil, false, namespace, configMaps)
	if err != nil {
		return nil, err // not remembered: an error is worded again each time
	}
	r.cache.Add(key, resolved.DeepCopy())
	return resolved, nil
}

// resolutionKey digests everything ProcessArgs reads for a steps or DAG template: the template and
// arguments as JSON (the text its substitution works on), the namespace, and the value of each variable a
// tag names. false when the result may depend on more: a ConfigMap-backed input or argument (the store's
// content), an expression tag (it may read any variable, workflow.duration among them), a nested tag, or a
// named variable whose value could make a tag for the second substitution pass.
func resolutionKey(tmpl *wfv1.Template, args wfv1.Arguments, globals common.Parameters, namespace string) (string, bool) {
	if t := tmpl.GetType(); t != wfv1.TemplateTypeSteps && t != wfv1.TemplateTypeDAG {
		return "", false // a pod's template is resolved once, when its node starts: nothing to save
	}
	fromConfigMap := func(p wfv1.Parameter) bool { return p.ValueFrom != nil && p.ValueFrom.ConfigMapKeyRef != nil }
	if slices.ContainsFunc(tmpl.Inputs.Parameters, fromConfigMap) || slices.ContainsFunc(args.Parameters, fromConfigMap) {
		return "", false // an argument without a value passes its valueFrom to the input
	}
	tmplJSON, err := json.Marshal(tmpl)
	if err != nil {
		return "", false
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return "", false
	}
	names, ok := tagNames(string(tmplJSON), nil)
	if !ok {
		return "", false
	}
	if names, ok = tagNames(string(argsJSON), names); !ok {
		return "", false
	}
	slices.Sort(names)
	names = slices.Compact(names)
	h := sha256.New()
	write := func(parts ...string) {
		for _, s := range parts {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	write(namespace, string(tmplJSON), string(argsJSON))
	for _, name := range names {
		v, found := globals[name]
		if mayFormTag(v) {
			return "", false
		}
		if found {
			write(name, "set", v)
		} else {
			write(name, "unset")
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// mayFormTag reports whether a substituted value could make a tag the second substitution pass resolves:
// one it holds, or one it forms with the braces of the text beside it.
func mayFormTag(v string) bool {
	return strings.Contains(v, "{{") || strings.Contains(v, "}}") ||
		strings.HasPrefix(v, "{") || strings.HasSuffix(v, "{") || strings.HasPrefix(v, "}") || strings.HasSuffix(v, "}")
}

// tagNames appends the variable names of the {{...}} tags in s to names, as argo's substitution looks them
// up (trimmed); false for an expression or a nested tag.
func tagNames(s string, names []string) ([]string, bool) {
	for {
		start := strings.Index(s, "{{")
		if start < 0 {
			return names, true
		}
		s = s[start+2:]
		end := strings.Index(s, "}}")
		if end < 0 {
			return names, true // no tag: nothing more is looked up
		}
		tag := s[:end]
		s = s[end+2:]
		name := strings.TrimSpace(tag)
		if strings.HasPrefix(name, "=") || strings.Contains(tag, "{{") {
			return nil, false
		}
		names = append(names, name)
	}
}
