package extstatus

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/internal/zipbomb"
)

// engineFanOut is the nodes of a finished DAG fan-out of n pods as the engine writes them: a root, the
// pod that feeds every child, and n children with an input and an output parameter.
func engineFanOut(n int) wfv1.Nodes {
	started := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 1, 0, time.UTC))
	finished := metav1.NewTime(started.Add(time.Second))
	nodes := wfv1.Nodes{"fan": {ID: "fan", Name: "fan", DisplayName: "fan", Type: wfv1.NodeTypeDAG, TemplateName: "main",
		TemplateScope: "local/fan", Phase: wfv1.NodeSucceeded, StartedAt: started, FinishedAt: finished, Children: []string{"fan-root"}}}
	root := wfv1.NodeStatus{ID: "fan-root", Name: "fan.root", DisplayName: "root", Type: wfv1.NodeTypePod, TemplateName: "step",
		TemplateScope: "local/fan", Phase: wfv1.NodeSucceeded, BoundaryID: "fan", StartedAt: started, FinishedAt: finished,
		Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}, ExitCode: ptr("0")}, TaskResultSynced: ptr(true)}
	for i := range n {
		id := fmt.Sprintf("fan-%d", 1000000000+i*7919)
		root.Children = append(root.Children, id)
		nodes[id] = wfv1.NodeStatus{ID: id, Name: fmt.Sprintf("fan.c%d", i), DisplayName: fmt.Sprintf("c%d", i), Type: wfv1.NodeTypePod,
			TemplateName: "step", TemplateScope: "local/fan", Phase: wfv1.NodeSucceeded, BoundaryID: "fan", StartedAt: started, FinishedAt: finished,
			Inputs:  &wfv1.Inputs{Parameters: []wfv1.Parameter{{Name: "in", Default: wfv1.AnyStringPtr(""), Value: wfv1.AnyStringPtr("v")}}},
			Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}, ExitCode: ptr("0")}, TaskResultSynced: ptr(true)}
	}
	nodes[root.ID] = root
	return nodes
}

func ptr[T any](v T) *T { return &v }

// heldBy reports the heap decoding data into into() keeps once collected, and what it allocated on the way.
func heldBy(t testing.TB, data []byte, into func() any) (held, allocated int64) {
	t.Helper()
	var before, after runtime.MemStats
	// Twice: a collection only moves sync.Pool contents (the gzip writers' 800 KB each) to the victim
	// cache, and the next frees them; freed during the measurement, they made "held" negative.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := into()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated = int64(after.TotalAlloc - before.TotalAlloc)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(v)
	return held, allocated
}

// allocatedBy reports the bytes f allocates.
func allocatedBy(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// repeated is prefix, n copies of item joined by commas, and suffix; item may hold %d, the copy's index.
func repeated(prefix, item string, n int, suffix string) []byte {
	var b bytes.Buffer
	b.WriteString(prefix)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if strings.Contains(item, "%d") {
			fmt.Fprintf(&b, item, i)
		} else {
			b.WriteString(item)
		}
	}
	b.WriteString(suffix)
	return b.Bytes()
}

// plainWorkflow is the JSON of a workflow whose status.nodes are nodes, as the API server stores it.
func plainWorkflow(nodes []byte) []byte {
	return slices.Concat([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"w","namespace":"ns","uid":"w-uid"},`+
		`"spec":{"entrypoint":"main"},"status":{"phase":"Running","nodes":`), nodes, []byte(`}}`))
}

func TestTheDecodedSizeEstimateIsNearWhatDecodingHolds(t *testing.T) {
	nodesT := func() any { return &wfv1.Nodes{} }
	fanOut := mustJSON(t, engineFanOut(2000))
	for _, tc := range []struct {
		sentence string
		data     []byte
		into     func() any
	}{
		{"the engine's DAG fan-out of 2,000 pods, into argo's nodes", fanOut, nodesT},
		{"10,000 nodes of a skipped fan-out, into argo's nodes", mustJSON(t, workflowWithNodes(10000).Status.Nodes), nodesT},
		{"the fan-out in a whole workflow's plain status", plainWorkflow(fanOut), func() any { return &wfv1.Workflow{} }},
		{"the fan-out decoded generically, as unstructured", fanOut, func() any { return &map[string]any{} }},
		{"an array of 200,000 empty artifacts, into argo's nodes", zipbomb.ArtifactsJSON(200000, 0), nodesT},
		{"an array of 200,000 empty artifacts, decoded generically", zipbomb.ArtifactsJSON(200000, 0), func() any { return &map[string]any{} }},
		{"50,000 empty nodes", repeated(`{`, `"%d":{}`, 50000, `}`), nodesT},
		{"20,000 empty stored templates", repeated(`{"status":{"storedTemplates":{`, `"%d":{}`, 20000, `}}}`), func() any { return &wfv1.Workflow{} }},
		{"20,000 empty steps in one step group (ParallelSteps decodes itself)", repeated(`{"spec":{"templates":[{"steps":[[`, `{}`, 20000, `]]}]}}`),
			func() any { return &wfv1.Workflow{} }},
	} {
		estimate := DecodedSize(tc.data, tc.into(), 0)
		held, allocated := heldBy(t, tc.data, tc.into)
		t.Logf("%s: %d bytes of JSON, estimated %d, held %d (%.2fx), allocated %d", tc.sentence, len(tc.data), estimate, held,
			float64(estimate)/float64(held), allocated)
		// Measured 0.89x (the generic fan-out) to 1.60x (empty nodes): the estimate is an upper bound within
		// about 10%, and never more than twice what is held.
		if ratio := float64(estimate) / float64(held); ratio < 0.75 || ratio > 2 {
			t.Errorf("%s: estimated %d bytes, %.2f times the %d held; want 0.75 to 2", tc.sentence, estimate, ratio, held)
		}
	}
}

func TestTheDecodedSizeEstimateMatchesKeysAsEncodingJSONDoes(t *testing.T) {
	const n = 10000
	exact := DecodedSize(zipbomb.ArtifactsJSON(n, 0), &wfv1.Nodes{}, 0)
	for _, tc := range []struct {
		sentence string
		data     []byte
		want     func(int64) bool
	}{
		{"keys in another case match their fields", bytes.ReplaceAll(bytes.ReplaceAll(zipbomb.ArtifactsJSON(n, 0), []byte(`"inputs"`), []byte(`"INPUTS"`)),
			[]byte(`"artifacts"`), []byte(`"ArtiFacts"`)), func(e int64) bool { return e == exact }},
		{"escaped keys match their fields", bytes.ReplaceAll(zipbomb.ArtifactsJSON(n, 0), []byte(`"artifacts"`), []byte(`"\u0061rtifacts"`)),
			func(e int64) bool { return e == exact }},
		{"a key folded as Unicode does ('ſ' is 's') matches its field", bytes.ReplaceAll(zipbomb.ArtifactsJSON(n, 0), []byte(`"artifacts"`),
			[]byte(`"artifactſ"`)), func(e int64) bool { return e == exact }},
		{"a key no field has is skipped, as it allocates nothing", bytes.ReplaceAll(zipbomb.ArtifactsJSON(n, 0), []byte(`"artifacts"`),
			[]byte(`"unknown"`)), func(e int64) bool { return e < 4<<10 }},
		{"a value of the wrong type is skipped, as it allocates nothing", repeated(`{"n":{"inputs":{"parameters":{"a":[`, `{}`, n, `]}}}}`),
			func(e int64) bool { return e < 4<<10 }},
		{"whitespace changes nothing", bytes.ReplaceAll(zipbomb.ArtifactsJSON(n, 0), []byte(`,`), []byte(" ,\n\t")),
			func(e int64) bool { return e == exact }},
	} {
		var decoded wfv1.Nodes
		err := json.Unmarshal(tc.data, &decoded)
		artifacts := 0
		if in := decoded["bomb"].Inputs; in != nil {
			artifacts = len(in.Artifacts)
		}
		if got := DecodedSize(tc.data, &wfv1.Nodes{}, 0); !tc.want(got) {
			t.Errorf("%s: estimated %d bytes (%d for the exact keys); encoding/json decoded %d artifacts (%v)", tc.sentence, got, exact,
				artifacts, err)
		}
	}
	if exact < n*int64(reflect.TypeFor[wfv1.Artifact]().Size()) {
		t.Errorf("%d empty artifacts estimated at %d bytes, less than their %d-byte structs", n, exact, reflect.TypeFor[wfv1.Artifact]().Size())
	}
	if got := DecodedSize(zipbomb.ArtifactsJSON(1000000, 0), &wfv1.Nodes{}, 1<<20); got > 2<<20 {
		t.Errorf("with a 1 MiB limit the estimate went on to %d bytes; it stops once past the limit", got)
	}
}

// Every type that decodes itself is charged as ownDecoders says, or its bytes and a generic decoding of
// them: a new one (an argo upgrade) may keep more, and is looked at here.
func TestEveryTypeThatDecodesItselfIsKnown(t *testing.T) {
	generic := []string{"v1alpha1.AnyString", "v1alpha1.Plugin"} // decode their bytes into an interface, keep a string or the bytes
	var found []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		if p := reflect.PointerTo(ty); p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
			if _, known := ownDecoders[ty]; !known {
				found = append(found, ty.String())
			}
			return
		}
		switch ty.Kind() {
		case reflect.Struct:
			for i := range ty.NumField() {
				walk(ty.Field(i).Type)
			}
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem())
		case reflect.Map:
			walk(ty.Key())
			walk(ty.Elem())
		}
	}
	walk(reflect.TypeFor[wfv1.Workflow]())
	slices.Sort(found)
	if !slices.Equal(found, generic) {
		t.Errorf("types that decode themselves and are charged generically: %v, want %v; add a new one to ownDecoders "+
			"with what it keeps", found, generic)
	}
}
