package extstatus

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// aRunningWorkflow has something in every part Encode handles: spec templates, labels and annotations,
// argo's status with nodes, conditions and outputs.
func aRunningWorkflow(t *testing.T) *wfv1.Workflow {
	t.Helper()
	wf := &wfv1.Workflow{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: wf, namespace: ns, uid: u-1, resourceVersion: "7", labels: {team: a}, annotations: {note: kept}, finalizers: [f]}
spec:
  entrypoint: main
  arguments: {parameters: [{name: p, value: "1"}]}
  templates:
  - name: main
    steps: [[{name: a, template: c}]]
  - name: c
    container: {image: busybox, command: [echo], resources: {limits: {cpu: 100m}}}
status:
  phase: Running
  startedAt: "2026-12-07T01:00:00Z"
  conditions: [{type: PodRunning, status: "True"}]
  nodes:
    wf: {id: wf, name: wf, type: Steps, phase: Running, startedAt: "2026-12-07T01:00:00Z"}
    wf-1: {id: wf-1, name: "wf[0].a", type: Pod, phase: Succeeded, hostNodeName: n1, outputs: {parameters: [{name: o, value: x}], exitCode: "0"}}
`), wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

func TestEncodeWritesArgosFieldsAndOursBesideThem(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC))
	suspended := true
	record := []AppliedAction{{UID: "a-1", Name: "stop-it", Outcome: "Succeeded", Message: "stopped"}}
	for _, tc := range []struct {
		name            string
		ext             Extensions
		annotations     map[string]string
		wantAnnotations map[string]string
	}{
		{name: "a workflow without extensions is argo's fields alone",
			wantAnnotations: map[string]string{"note": "kept"}},
		{name: "the extensions go into status and the record and mark into their mirrors",
			ext: Extensions{Shutdown: wfv1.ShutdownStrategyStop, ShutdownMessage: "why", Suspended: &suspended, AppliedActions: record,
				ResultWaits: map[string]metav1.Time{"wf-1": since}, RetryCleanupSince: &since},
			wantAnnotations: map[string]string{"note": "kept",
				AnnotationAppliedActions: `[{"uid":"a-1","name":"stop-it","outcome":"Succeeded"}]`, AnnotationRetryCleanup: "2026-12-07T02:00:00Z",
				AnnotationMirrorsOf: "u-1"}},
		{name: "mirrors of a record and a mark that are gone are removed, an empty one too",
			annotations:     map[string]string{"note": "kept", AnnotationAppliedActions: `[{"uid":"old"}]`, AnnotationRetryCleanup: "", AnnotationMirrorsOf: "u-0"},
			wantAnnotations: map[string]string{"note": "kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := aRunningWorkflow(t)
			if tc.annotations != nil {
				wf.Annotations = tc.annotations
			}
			before := wf.DeepCopy()
			data, err := Encode(wf, tc.ext)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(wf, before) {
				t.Error("Encode modified the workflow it encoded")
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			// What argo's own types encode is there unchanged, but for the annotations and our status fields.
			argoJSON, _ := json.Marshal(wf)
			var want map[string]any
			_ = json.Unmarshal(argoJSON, &want)
			want["apiVersion"], want["kind"] = "argoproj.io/v1alpha1", "Workflow"
			gotStatus, _ := got["status"].(map[string]any)
			ours := map[string]any{}
			for _, k := range fieldNames {
				if v, ok := gotStatus[k]; ok {
					ours[k] = v
					delete(gotStatus, k)
				}
			}
			gotAnnotations, _, _ := unstructured.NestedStringMap(got, "metadata", "annotations")
			unstructured.RemoveNestedField(got, "metadata", "annotations")
			unstructured.RemoveNestedField(want, "metadata", "annotations")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("argo's fields differ from argo's own encoding:\n got %v\nwant %v", got, want)
			}
			if !reflect.DeepEqual(gotAnnotations, tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", gotAnnotations, tc.wantAnnotations)
			}
			extJSON, _ := json.Marshal(tc.ext)
			var wantOurs map[string]any
			_ = json.Unmarshal(extJSON, &wantOurs)
			if len(wantOurs) == 0 {
				wantOurs = map[string]any{}
			}
			if !reflect.DeepEqual(ours, wantOurs) {
				t.Errorf("our status fields = %v, want %v", ours, wantOurs)
			}
			// And it reads back as it was.
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			back, backExt, err := FromUnstructured(u)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Spec, wf.Spec) || len(back.Status.Nodes) != 2 || !reflect.DeepEqual(backExt.AppliedActions, tc.ext.AppliedActions) {
				t.Errorf("the encoding does not read back: spec equal %t, %d nodes, record %v",
					reflect.DeepEqual(back.Spec, wf.Spec), len(back.Status.Nodes), backExt.AppliedActions)
			}
		})
	}
}

func TestNoStatusFieldOfOursSharesANameWithOneOfArgos(t *testing.T) {
	// encoding/json silently drops both fields of a name two embedded structs share.
	argos := map[string]bool{}
	status := reflect.TypeFor[wfv1.WorkflowStatus]()
	for i := range status.NumField() {
		argos[strings.Split(status.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	ext := reflect.TypeFor[Extensions]()
	if ext.NumField() != len(fieldNames) {
		t.Fatalf("Extensions has %d fields, fieldNames names %d", ext.NumField(), len(fieldNames))
	}
	for i := range ext.NumField() {
		name := strings.Split(ext.Field(i).Tag.Get("json"), ",")[0]
		if argos[name] {
			t.Errorf("status.%s is both argo's and ours", name)
		}
	}
}

func TestFitEncodedCompressesTheNodesOnlyOverTheLimit(t *testing.T) {
	wf := workflowWithNodes(10000)
	ext := Extensions{AppliedActions: []AppliedAction{{UID: "a-1", Name: "a", Outcome: "Succeeded"}}}
	data, err := Encode(wf, ext)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := FitEncoded(wf, ext, data, len(data)); err != nil || &body[0] != &data[0] {
		t.Errorf("a workflow at the limit is written as encoded: %v", err)
	}
	body, err := FitEncoded(wf, ext, data, len(data)/2)
	if err != nil || len(body) > len(data)/2 {
		t.Fatalf("10,000 nodes compress under half their size: %d bytes, %v", len(body), err)
	}
	if len(wf.Status.Nodes) != 10000 || wf.Status.CompressedNodes != "" {
		t.Error("FitEncoded modified the workflow")
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "nodes"); found {
		t.Error("a compressed workflow still has status.nodes")
	}
	// The same as Fit writes for the same workflow.
	viaMap, err := ToUnstructured(wf, ext)
	if err != nil {
		t.Fatal(err)
	}
	fitted, _, err := Fit(viaMap, len(data)/2)
	if err != nil {
		t.Fatal(err)
	}
	// Their compressed nodes differ in key order; inflated, they are the same.
	back, backExt, err := FromUnstructured(u)
	if err != nil || len(back.Status.Nodes) != 10000 || len(backExt.AppliedActions) != 1 {
		t.Errorf("the compressed encoding reads back %d nodes, record %v: %v", len(back.Status.Nodes), backExt.AppliedActions, err)
	}
	if err := errors.Join(InflateUnstructured(u), InflateUnstructured(fitted)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(u.Object, fitted.Object) {
		t.Error("FitEncoded and Fit write different workflows for the same one")
	}

	if _, err := FitEncoded(wf, ext, data, 1000); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "over the limit of 1000") {
		t.Errorf("a workflow over the limit even compressed: err = %v, want ErrTooLarge with the sizes", err)
	}
	bare := workflowWithNodes(0)
	bareData, _ := Encode(bare, Extensions{})
	if body, err := FitEncoded(bare, Extensions{}, bareData, 10); err != nil || len(body) != len(bareData) {
		t.Errorf("a workflow without nodes over the limit is left to the API server: %v", err)
	}
}
