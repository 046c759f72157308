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

	"github.com/wfguard/wfguard/internal/zipbomb"
)

func TestExtensionsRoundTripBesideArgosStatus(t *testing.T) {
	suspended := true
	wf := &wfv1.Workflow{}
	wf.Name, wf.Namespace = "wf", "ns"
	wf.Status.Phase = wfv1.WorkflowRunning
	ext := Extensions{Shutdown: wfv1.ShutdownStrategyStop, Suspended: &suspended,
		AppliedActions: []AppliedAction{{UID: "u1", Name: "a1", Outcome: "Succeeded"}}}
	u, err := ToUnstructured(wf, ext)
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
		t.Errorf("status.phase = %q, want argo's field kept", phase)
	}
	gotWF, gotExt, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if gotWF.Status.Phase != wfv1.WorkflowRunning || gotExt.Shutdown != wfv1.ShutdownStrategyStop ||
		gotExt.Suspended == nil || !*gotExt.Suspended || len(gotExt.AppliedActions) != 1 || gotExt.AppliedActions[0].UID != "u1" {
		t.Errorf("round trip = %+v %+v", gotWF.Status.Phase, gotExt)
	}
	empty, err := ToUnstructured(wf, Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range fieldNames {
		if _, found, _ := unstructured.NestedFieldNoCopy(empty.Object, "status", k); found {
			t.Errorf("an empty extension wrote status.%s", k)
		}
	}
}

func TestAMalformedWorkflowGivesAnErrorNamingIt(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": map[string]any{"name": "bad", "namespace": "ns"},
		"spec":     map[string]any{"templates": "not-a-list"},
	}}
	if _, _, err := FromUnstructured(u); err == nil || !strings.Contains(err.Error(), "decoding workflow ns/bad") {
		t.Errorf("err = %v, want a decode error naming ns/bad", err)
	}
}

func TestOnlyOurOwnStatusFieldsDecodeAsExtensions(t *testing.T) {
	workflow := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
			"metadata": map[string]any{"name": "w", "namespace": "ns"},
			"status":   status,
		}}
	}
	tests := []struct {
		name    string
		status  map[string]any
		wantErr bool
		check   func(Extensions) bool
	}{
		{"a malformed field of ours is an error naming the workflow", map[string]any{"appliedActions": "not-a-list"}, true, nil},
		{"a key that differs from ours only in case decides nothing", map[string]any{"Suspended": true, "SHUTDOWN": "Terminate"}, false,
			func(e Extensions) bool { return e.Suspended == nil && e.Shutdown == "" }},
		{"our fields beside argo's decode", map[string]any{"phase": "Running", "suspended": true, "shutdown": "Stop"}, false,
			func(e Extensions) bool {
				return e.Suspended != nil && *e.Suspended && e.Shutdown == wfv1.ShutdownStrategyStop
			}},
		{"a status without our fields gives none", map[string]any{"phase": "Running"}, false,
			func(e Extensions) bool { return e.Suspended == nil && e.AppliedActions == nil && e.ResultWaits == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ext, err := FromUnstructured(workflow(tt.status))
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "wfguard status fields of workflow ns/w") {
					t.Errorf("err = %v, want an error naming ns/w's wfguard status fields", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(ext) {
				t.Errorf("extensions %+v", ext)
			}
		})
	}
}

func crd(t *testing.T, statusSchema string) *unstructured.Unstructured {
	t.Helper()
	doc := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: workflows.argoproj.io}
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          status:
` + statusSchema
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTheCRDCheckRefusesSchemasThatWouldPrune(t *testing.T) {
	cases := []struct {
		name, status, wantErr string
	}{
		{"argo's minimal CRD preserves unknown fields", "            type: object\n            x-kubernetes-preserve-unknown-fields: true\n", ""},
		{"a schema declaring the fields is accepted",
			"            type: object\n            properties:\n              shutdown: {type: string}\n              shutdownMessage: {type: string}\n              suspended: {type: boolean}\n              appliedActions: {type: array}\n              resultWaits: {type: object}\n              retryCleanupSince: {type: string}\n", ""},
		{"argo's full CRD style prunes them",
			"            type: object\n            properties:\n              phase: {type: string}\n", "would prune [status.shutdown status.shutdownMessage status.suspended status.appliedActions status.resultWaits status.retryCleanupSince]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCRDPreserves(crd(t, tc.status))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// argo's CLI, server and UI write whole Workflows back through argo's Go types: the record of applied actions
// must survive such a write (in an annotation those types keep), so no action is applied twice.
func TestTheAppliedRecordSurvivesAWriteThroughArgosTypes(t *testing.T) {
	for _, tc := range []struct {
		sentence   string
		annotation string // replaces the mirror after the foreign write; "-" keeps it
		want       []AppliedAction
	}{
		{"the record comes back from its mirror, with its message marked lost", "-",
			[]AppliedAction{{UID: "u1", Name: "a1", Outcome: "Succeeded", Reason: "Applied", Message: LostMessage}}},
		{"a malformed mirror restores nothing", "{not json", nil},
		{"a mirror entry without a UID is not restored", `[{"name":"a1","outcome":"Succeeded"}]`, nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			wf.Name, wf.Namespace, wf.UID = "wf", "ns", "wf-uid"
			u, err := ToUnstructured(wf, Extensions{AppliedActions: []AppliedAction{{UID: "u1", Name: "a1", Outcome: "Succeeded", Reason: "Applied", Message: "workflow suspended"}}})
			if err != nil {
				t.Fatal(err)
			}
			rewritten := throughArgosTypes(t, u, AnnotationAppliedActions, tc.annotation)
			if _, found, _ := unstructured.NestedFieldNoCopy(rewritten.Object, "status", "appliedActions"); found {
				t.Fatal("the write through argo's types kept status.appliedActions: the test no longer models it")
			}
			_, ext, err := FromUnstructured(rewritten)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ext.AppliedActions, tc.want) {
				t.Fatalf("record %+v, want %+v", ext.AppliedActions, tc.want)
			}
		})
	}
}

func TestThePrunedRecordLeavesNoMirror(t *testing.T) {
	wf := &wfv1.Workflow{}
	wf.Name, wf.Namespace = "wf", "ns"
	wf.Annotations = map[string]string{AnnotationAppliedActions: `[{"uid":"old"}]`, "keep": "me"}
	u, err := ToUnstructured(wf, Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := u.GetAnnotations(); got[AnnotationAppliedActions] != "" || got["keep"] != "me" {
		t.Fatalf("annotations %v, want the mirror gone and the rest kept", got)
	}
}

func TestTheRetryCleanupMarkSurvivesAWriteThroughArgosTypes(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		sentence   string
		annotation string // replaces the mirror after the foreign write; "-" keeps it
		want       *metav1.Time
	}{
		{"the mark comes back from its mirror", "-", &since},
		{"a malformed mirror still marks the cleanup, as begun long ago", "yesterday", &metav1.Time{}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			wf.Name, wf.Namespace, wf.UID = "wf", "ns", "wf-uid"
			u, err := ToUnstructured(wf, Extensions{RetryCleanupSince: &since})
			if err != nil {
				t.Fatal(err)
			}
			rewritten := throughArgosTypes(t, u, AnnotationRetryCleanup, tc.annotation) // drops status.retryCleanupSince
			_, ext, err := FromUnstructured(rewritten)
			if err != nil {
				t.Fatal(err)
			}
			if ext.RetryCleanupSince == nil || !ext.RetryCleanupSince.Equal(tc.want) {
				t.Fatalf("mark %v, want %v", ext.RetryCleanupSince, tc.want)
			}
		})
	}
	closed, err := ToUnstructured(&wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationRetryCleanup: "x"}}}, Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := closed.GetAnnotations()[AnnotationRetryCleanup]; ok {
		t.Errorf("a closed cleanup left its mirror: %v", closed.GetAnnotations())
	}
}

// argo's resubmit, and a manifest copied from another workflow, carry every annotation over: the mirrors
// of the workflow they came from must not decide anything in the new one.
func TestMirrorsCopiedFromAnotherWorkflowRestoreNothing(t *testing.T) {
	const record = `[{"uid":"a1","name":"retry-1","outcome":"Succeeded","reason":"Applied"}]`
	since := metav1.NewTime(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	restored := []AppliedAction{{UID: "a1", Name: "retry-1", Outcome: "Succeeded", Reason: "Applied", Message: LostMessage}}
	for _, tc := range []struct {
		sentence     string
		mirrorsOf    string // "-": no such annotation, as an older wfguard wrote them
		phase        wfv1.WorkflowPhase
		wantRestored bool
	}{
		{"mirrors naming this workflow are restored", "new-uid", wfv1.WorkflowRunning, true},
		{"mirrors naming the workflow they were copied from restore nothing", "old-uid", "", false},
		{"they restore nothing even once the copy has a phase", "old-uid", wfv1.WorkflowRunning, false},
		{"an empty name restores nothing", "", wfv1.WorkflowRunning, false},
		{"mirrors from before the name existed are restored on a started workflow", "-", wfv1.WorkflowRunning, true},
		{"they restore nothing on a workflow that never started, as a resubmitted one", "-", "", false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow"}}
			wf.Name, wf.Namespace, wf.UID = "copy", "ns", "new-uid"
			wf.Status.Phase = tc.phase
			wf.Annotations = map[string]string{"keep": "me", AnnotationAppliedActions: record, AnnotationRetryCleanup: "2026-12-07T09:00:00Z"}
			if tc.mirrorsOf != "-" {
				wf.Annotations[AnnotationMirrorsOf] = tc.mirrorsOf
			}
			u := &unstructured.Unstructured{}
			data, _ := json.Marshal(wf) // as argo's typed client writes it: no status field of ours
			if err := u.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			_, ext, err := FromUnstructured(u)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantRestored {
				if ext.AppliedActions != nil || ext.RetryCleanupSince != nil {
					t.Fatalf("restored record %v and mark %v from mirrors that are not this workflow's", ext.AppliedActions, ext.RetryCleanupSince)
				}
				// The next write leaves none of the copied mirrors behind.
				out, err := ToUnstructured(wf, ext)
				if err != nil {
					t.Fatal(err)
				}
				if got := out.GetAnnotations(); !reflect.DeepEqual(got, map[string]string{"keep": "me"}) {
					t.Errorf("annotations after the next write = %v, want only the copy's own", got)
				}
				return
			}
			if !reflect.DeepEqual(ext.AppliedActions, restored) || ext.RetryCleanupSince == nil || !ext.RetryCleanupSince.Equal(&since) {
				t.Fatalf("record %v and mark %v, want %v and %v", ext.AppliedActions, ext.RetryCleanupSince, restored, since)
			}
			out, err := ToUnstructured(wf, ext)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.GetAnnotations()[AnnotationMirrorsOf]; got != "new-uid" {
				t.Errorf("the next write names the mirrors' workflow %q, want new-uid", got)
			}
		})
	}
}

// throughArgosTypes is a foreign write: the workflow decoded into argo's type and encoded again, as argo's
// typed client does, with annotation key set to value unless value is "-".
func throughArgosTypes(t *testing.T, u *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var typed wfv1.Workflow
	if err := json.Unmarshal(data, &typed); err != nil {
		t.Fatal(err)
	}
	if value != "-" {
		typed.Annotations[key] = value
	}
	raw, err := json.Marshal(&typed)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := &unstructured.Unstructured{}
	if err := rewritten.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return rewritten
}
func TestAWorkflowWhoseOwnJSONWouldDecodePastTheBoundIsRefused(t *testing.T) {
	toUnstructured := func(data []byte) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		return u
	}
	// 500,000 empty artifacts in plain status.nodes: 1.5 MB, what etcd stores, ~140 MiB decoded.
	bomb := toUnstructured(plainWorkflow(zipbomb.ArtifactsJSON(500000, 0)))
	fanOut := toUnstructured(plainWorkflow(mustJSON(t, engineFanOut(2000))))
	var defaultInflater *Inflater
	for _, tc := range []struct {
		sentence string
		u        *unstructured.Unstructured
		decode   func(u *unstructured.Unstructured) (int64, error)
		refused  bool
	}{
		{"plain nodes of the engine's fan-out are decoded", fanOut, func(u *unstructured.Unstructured) (int64, error) {
			_, _, size, err := defaultInflater.Decode(u)
			return size, err
		}, false},
		{"plain nodes of empty artifacts are refused before they are decoded", bomb, func(u *unstructured.Unstructured) (int64, error) {
			_, _, size, err := defaultInflater.Decode(u)
			return size, err
		}, true},
		{"the same workflow without its nodes is decoded, to settle its actions", bomb, func(u *unstructured.Unstructured) (int64, error) {
			_, _, err := WithoutNodes(u)
			return 0, err
		}, false},
	} {
		var (
			size int64
			err  error
		)
		allocated := allocatedBy(func() { size, err = tc.decode(tc.u) })
		var refused *RefusedError
		if got := errors.As(err, &refused); got != tc.refused || (err != nil && !tc.refused) {
			t.Errorf("%s: err = %v, want refused %t", tc.sentence, err, tc.refused)
			continue
		}
		if tc.refused && (refused.Reason != InflateOverDecodedSize || !refused.Plain || refused.Field() != "the workflow's JSON" ||
			!strings.Contains(err.Error(), "workflow ns/w")) {
			t.Errorf("%s: %#v (%v), want over_decoded_size of the workflow's JSON, naming it", tc.sentence, refused, err)
		}
		if tc.refused && allocated > 32<<20 {
			t.Errorf("%s: refusing allocated %d bytes", tc.sentence, allocated)
		}
		t.Logf("%s: estimated %d (%v), %d bytes allocated", tc.sentence, max(size, decodedOf(refused)), err, allocated)
	}
}
