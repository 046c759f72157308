package compat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Case is one workflow of the corpus, renamed so both controllers run it under the same name (node IDs and
// pod names derive from it).
type Case struct {
	// Name identifies the case: its source file without .yaml, slashes as dashes, plus #n for a file's n-th
	// workflow.
	Name string `json:"name"`
	// Source is the file it came from, relative to the corpus dir.
	Source string `json:"source"`
	// Origin says which corpus the case belongs to; the bar counts argo's examples only.
	Origin   Origin         `json:"origin"`
	Workflow *wfv1.Workflow `json:"-"`
}

// Origin is the corpus a case comes from.
type Origin string

const (
	// OriginArgoExamples is argo's examples/ directory of the pinned release.
	OriginArgoExamples Origin = "argo-examples"
	// OriginOwn is compat/corpus: workflows of our own, one or more per feature the suite checks.
	OriginOwn Origin = "own"
)

// Skipped is a document of the corpus that is not run, and why.
type Skipped struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Corpus is what a directory of argo manifests holds: the workflows to run and the objects they need
// (WorkflowTemplates, ClusterWorkflowTemplates, ConfigMaps, PersistentVolumeClaims), installed before any
// workflow is submitted.
type Corpus struct {
	Cases   []Case
	Objects []*unstructured.Unstructured
	Skipped []Skipped

	origin Origin
}

// supportKinds are the kinds of the corpus installed before its workflows run.
var supportKinds = map[string]bool{
	"WorkflowTemplate": true, "ClusterWorkflowTemplate": true, "ConfigMap": true, "PersistentVolumeClaim": true,
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// LoadCorpus reads every .yaml file under dir; its cases carry origin.
func LoadCorpus(dir string, origin Origin) (*Corpus, error) {
	c := &Corpus{origin: origin}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading corpus file %s: %w", rel, err)
		}
		return c.add(rel, data)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(c.Cases, func(i, j int) bool { return c.Cases[i].Name < c.Cases[j].Name })
	return c, nil
}

func (c *Corpus) add(rel string, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	workflows := 0
	for doc := 0; ; doc++ {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("parsing corpus file %s (document %d): %w", rel, doc+1, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		switch kind := u.GetKind(); {
		case kind == "Workflow":
			workflows++
			name := caseName(rel, workflows)
			wf, err := toWorkflow(&u, name)
			if err != nil {
				c.Skipped = append(c.Skipped, Skipped{Source: rel, Kind: kind, Reason: err.Error()})
				continue
			}
			c.Cases = append(c.Cases, Case{Name: name, Source: rel, Origin: c.origin, Workflow: wf})
		case supportKinds[kind]:
			c.Objects = append(c.Objects, &u)
		default:
			c.Skipped = append(c.Skipped, Skipped{Source: rel, Kind: kind, Reason: "not a Workflow nor an object a workflow needs"})
		}
	}
}

func caseName(rel string, n int) string {
	name := strings.ReplaceAll(strings.TrimSuffix(rel, ".yaml"), string(filepath.Separator), "-")
	if n > 1 {
		name = fmt.Sprintf("%s#%d", name, n)
	}
	return name
}

// toWorkflow decodes u and names it after the case: a generateName gives way to a fixed, DNS-safe name.
func toWorkflow(u *unstructured.Unstructured, caseName string) (*wfv1.Workflow, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var wf wfv1.Workflow
	if err := yaml.UnmarshalStrict(data, &wf); err != nil {
		return nil, fmt.Errorf("decoding the workflow: %w", err)
	}
	name := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(name) > 50 {
		name = strings.Trim(name[:50], "-")
	}
	wf.Name, wf.GenerateName, wf.Namespace = name, "", ""
	return &wf, nil
}

// Merge is c and other run as one corpus. Two cases of the same name are an error: a case's name is its
// workflow's name, and the report keys on it.
func (c *Corpus) Merge(other *Corpus) (*Corpus, error) {
	out := &Corpus{
		Cases:   slices.Concat(c.Cases, other.Cases),
		Objects: slices.Concat(c.Objects, other.Objects),
		Skipped: slices.Concat(c.Skipped, other.Skipped),
	}
	seen := map[string]Origin{}
	for _, cs := range out.Cases {
		if o, dup := seen[cs.Name]; dup {
			return nil, fmt.Errorf("merging corpora: case %q is in %s and in %s", cs.Name, o, cs.Origin)
		}
		seen[cs.Name] = cs.Origin
	}
	return out, nil
}

// Select keeps the cases whose names are listed, in the list's order; a name matching none is an error.
func (c *Corpus) Select(names ...string) (*Corpus, error) {
	byName := map[string]Case{}
	for _, cs := range c.Cases {
		byName[cs.Name] = cs
	}
	out := &Corpus{Objects: c.Objects}
	for _, n := range names {
		cs, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("selecting corpus case %q: no such case", n)
		}
		out.Cases = append(out.Cases, cs)
	}
	return out, nil
}
