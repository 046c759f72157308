package extstatus

import (
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Extensions are the status fields of the WorkflowAction design (status.shutdown, status.suspended) and
// wfguard's write-ahead record of applied actions. They live beside argo's WorkflowStatus in the object.
type Extensions struct {
	// Shutdown is the shutdown strategy the controller accepted; it supersedes spec.shutdown.
	Shutdown wfv1.ShutdownStrategy `json:"shutdown,omitempty"`
	// ShutdownMessage is the requester's reason given with the accepted Stop or Terminate, for the
	// workflow's final message.
	ShutdownMessage string `json:"shutdownMessage,omitempty"`
	// Suspended is the workflow-level suspension the controller accepted.
	Suspended *bool `json:"suspended,omitempty"`
	// AppliedActions records actions applied in the same write as their effect, until their own status is written.
	AppliedActions []AppliedAction `json:"appliedActions,omitempty"`
	// ResultWaits records, per node ID, when a node whose pod succeeded began waiting for its task result:
	// the persisted start of the bounded wait (the node message repeats it for people, not for code).
	ResultWaits map[string]metav1.Time `json:"resultWaits,omitempty"`
	// RetryCleanupSince is set by an applied Retry until the pods and task results of the nodes it removed
	// are gone; no node runs before, since the nodes that run again reuse their names.
	RetryCleanupSince *metav1.Time `json:"retryCleanupSince,omitempty"`
}

// AppliedAction is one write-ahead entry.
type AppliedAction struct {
	UID     types.UID `json:"uid"`
	Name    string    `json:"name"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	// Seal proves the controller wrote the entry (provenance.PurposeAppliedAction over the workflow's UID,
	// the action's UID and name, the outcome and the reason): whoever may update a Workflow may write its
	// status too, and an entry decides that its action is not applied again.
	Seal string `json:"seal,omitempty"`
}

// fieldNames are the status keys Extensions owns.
var fieldNames = []string{"shutdown", "shutdownMessage", "suspended", "appliedActions", "resultWaits", "retryCleanupSince"}

// FromUnstructured decodes a Workflow and its extensions, with compressed nodes inflated by the package's
// default Inflater. Unknown status fields other than ours are dropped, as argo's own controller does.
func FromUnstructured(u *unstructured.Unstructured) (*wfv1.Workflow, Extensions, error) {
	return defaultInflater.FromUnstructured(u)
}

// WithoutNodes decodes u as FromUnstructured does, without status.nodes and status.compressedNodes: for a
// reader that needs the workflow's metadata and wfguard's fields, not its nodes, and so inflates nothing.
func WithoutNodes(u *unstructured.Unstructured) (*wfv1.Workflow, Extensions, error) {
	return defaultInflater.FromUnstructured(withoutNodes(u))
}

// FromUnstructured is the package's FromUnstructured within i's bounds.
func (i *Inflater) FromUnstructured(u *unstructured.Unstructured) (*wfv1.Workflow, Extensions, error) {
	wf, ext, _, err := i.Decode(u)
	return wf, ext, err
}

// Decode is FromUnstructured that also returns the estimated bytes the decoding holds (DecodedSize), what
// a cache of decodings counts. Its own JSON, plain status.nodes included, is refused (a RefusedError
// InflateOverDecodedSize) when its decoding would take more than MaxDecoded: a 1.4 MB status of empty
// nodes holds about 70 times that.
func (i *Inflater) Decode(u *unstructured.Unstructured) (*wfv1.Workflow, Extensions, int64, error) {
	i = i.orDefault()
	var ext Extensions
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, ext, 0, fmt.Errorf("encoding workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	size := decodedSize(data, workflowShape(), i.cfg.MaxDecoded)
	if size > i.cfg.MaxDecoded {
		return nil, ext, 0, fmt.Errorf("decoding workflow %s/%s: %w", u.GetNamespace(), u.GetName(),
			&RefusedError{Reason: InflateOverDecodedSize, Plain: true, Stated: len(data), Decoded: size, Limit: int(i.cfg.MaxDecoded)})
	}
	wf := &wfv1.Workflow{}
	if err := i.decodeWithin(size, func() error { return json.Unmarshal(data, wf) }); err != nil {
		return nil, ext, 0, fmt.Errorf("decoding workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	nodes, err := i.inflateNodes(wf)
	if err != nil {
		return nil, ext, 0, err
	}
	size += nodes
	if ext, err = extensionsOf(u); err != nil {
		return nil, ext, 0, fmt.Errorf("decoding wfguard status fields of workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	if !ownMirrors(wf) {
		return wf, ext, size, nil // the next write replaces what was copied with the mirrors of ext
	}
	if ext.AppliedActions == nil {
		ext.AppliedActions = appliedFromAnnotation(wf.Annotations[AnnotationAppliedActions])
	}
	if ext.RetryCleanupSince == nil {
		ext.RetryCleanupSince = retryCleanupFromAnnotation(wf.Annotations[AnnotationRetryCleanup])
	}
	return wf, ext, size, nil
}

// ownMirrors reports whether wf's annotation mirrors were written for wf itself. argo's resubmit, and a
// manifest copied from another workflow, carry every annotation over: a copied retry-cleanup mark would put
// a new workflow into the cleanup of another's pods, and fail it on the first error listing them. Mirrors
// written before AnnotationMirrorsOf existed name no workflow; they are trusted on a workflow that has a
// phase, which a resubmitted one has not.
func ownMirrors(wf *wfv1.Workflow) bool {
	if of, ok := wf.Annotations[AnnotationMirrorsOf]; ok {
		return of != "" && types.UID(of) == wf.UID
	}
	return wf.Status.Phase != ""
}

// extensionsOf decodes only our status fields: decoding the whole object a second time to pick them out
// cost as much as decoding the workflow.
func extensionsOf(u *unstructured.Unstructured) (Extensions, error) {
	var ext Extensions
	status, _ := u.Object["status"].(map[string]any)
	ours := map[string]any{}
	for _, k := range fieldNames {
		if v, ok := status[k]; ok {
			ours[k] = v
		}
	}
	if len(ours) == 0 {
		return ext, nil
	}
	data, err := json.Marshal(ours)
	if err != nil {
		return ext, err
	}
	err = json.Unmarshal(data, &ext)
	return ext, err
}

// AnnotationAppliedActions mirrors the write-ahead record without its messages. argo's CLI, server and UI
// rewrite whole Workflows through argo's Go types, which keep annotations but drop status.appliedActions: the
// mirror lets the drain still see those actions as applied, so none is applied twice.
const AnnotationAppliedActions = "wfguard.io/applied-actions"

// LostMessage is the message of an outcome restored from the annotation.
const LostMessage = "applied; its message was lost when another writer rewrote the workflow through argo's types"

// AnnotationRetryCleanup mirrors status.retryCleanupSince for the same reason: a foreign rewrite that dropped
// it would let nodes run again next to the previous run's pods of the same names.
const AnnotationRetryCleanup = "wfguard.io/retry-cleanup-since"

// AnnotationMirrorsOf is the UID of the workflow the mirrors above were written for (ownMirrors).
const AnnotationMirrorsOf = "wfguard.io/mirrors-of"

// retryCleanupFromAnnotation restores the mark; a malformed value still marks the cleanup, from now on
// unknown, as started at the zero time (so its bound has passed and it ends at once if nothing is left).
func retryCleanupFromAnnotation(v string) *metav1.Time {
	if v == "" {
		return nil
	}
	t := metav1.Time{}
	if err := t.UnmarshalQueryParameter(v); err != nil {
		return &metav1.Time{}
	}
	return &t
}

type appliedMirror struct {
	UID     types.UID `json:"uid"`
	Name    string    `json:"name"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	Seal    string    `json:"seal,omitempty"`
}

// appliedFromAnnotation restores the record a foreign write dropped. A malformed annotation restores nothing:
// it is only a mirror of what the controller wrote.
func appliedFromAnnotation(v string) []AppliedAction {
	if v == "" {
		return nil
	}
	var mirror []appliedMirror
	if err := json.Unmarshal([]byte(v), &mirror); err != nil {
		return nil
	}
	var out []AppliedAction
	for _, m := range mirror {
		if m.UID == "" {
			continue
		}
		out = append(out, AppliedAction{UID: m.UID, Name: m.Name, Outcome: m.Outcome, Reason: m.Reason, Message: LostMessage, Seal: m.Seal})
	}
	return out
}

func appliedAnnotation(record []AppliedAction) (string, error) {
	mirror := make([]appliedMirror, 0, len(record))
	for _, a := range record {
		mirror = append(mirror, appliedMirror{UID: a.UID, Name: a.Name, Outcome: a.Outcome, Reason: a.Reason, Seal: a.Seal})
	}
	data, err := json.Marshal(mirror)
	return string(data), err
}

// ToUnstructured is Encode decoded into an unstructured object.
func ToUnstructured(wf *wfv1.Workflow, ext Extensions) (*unstructured.Unstructured, error) {
	data, err := Encode(wf, ext)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("encoding workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	return u, nil
}

// stored is a Workflow as it is stored: its extensions beside argo's status fields. Encoding it straight
// from argo's types, instead of through an unstructured map, is what keeps a pass's write cheap.
type stored struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              wfv1.WorkflowSpec `json:"spec"`
	Status            storedStatus      `json:"status"`
}

// storedStatus is argo's status with ours beside it. No field name is shared
// (TestNoStatusFieldOfOursSharesANameWithOneOfArgos): encoding/json would drop both.
type storedStatus struct {
	wfv1.WorkflowStatus
	Extensions
}

// Encode returns the JSON of a Workflow as it is stored: the extensions merged into status, the record and
// the retry-cleanup mark mirrored in annotations with the UID they belong to, apiVersion and kind set. wf is
// not modified.
func Encode(wf *wfv1.Workflow, ext Extensions) ([]byte, error) {
	meta := wf.ObjectMeta // a shallow copy: only its annotations are replaced, by a copy
	annotations, err := mirrored(wf.Annotations, ext, wf.UID)
	if err != nil {
		return nil, fmt.Errorf("encoding the annotation mirrors of %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	meta.Annotations = annotations
	data, err := json.Marshal(&stored{
		TypeMeta:   metav1.TypeMeta{APIVersion: wfv1.SchemeGroupVersion.String(), Kind: "Workflow"},
		ObjectMeta: meta,
		Spec:       wf.Spec,
		Status:     storedStatus{WorkflowStatus: wf.Status, Extensions: ext},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	return data, nil
}

// holds reports whether annotations has key set to v, or, for v "", not at all.
func holds(annotations map[string]string, key, v string) bool {
	got, ok := annotations[key]
	return got == v && ok == (v != "")
}

// mirrored returns annotations with the mirrors of ext, naming workflow uid; annotations itself when they
// are already there.
func mirrored(annotations map[string]string, ext Extensions, uid types.UID) (map[string]string, error) {
	var record, cleanup string
	if len(ext.AppliedActions) > 0 {
		v, err := appliedAnnotation(ext.AppliedActions)
		if err != nil {
			return nil, err
		}
		record = v
	}
	if ext.RetryCleanupSince != nil {
		v, err := ext.RetryCleanupSince.MarshalQueryParameter()
		if err != nil {
			return nil, err
		}
		cleanup = v
	}
	var of string
	if record != "" || cleanup != "" {
		of = string(uid)
	}
	if holds(annotations, AnnotationAppliedActions, record) && holds(annotations, AnnotationRetryCleanup, cleanup) &&
		holds(annotations, AnnotationMirrorsOf, of) {
		return annotations, nil // most writes: no record and no mark, or the same ones
	}
	out := make(map[string]string, len(annotations)+3)
	for k, v := range annotations {
		out[k] = v
	}
	for key, v := range map[string]string{AnnotationAppliedActions: record, AnnotationRetryCleanup: cleanup, AnnotationMirrorsOf: of} {
		if v == "" {
			delete(out, key)
		} else {
			out[key] = v
		}
	}
	return out, nil
}

// CheckCRDPreserves returns an error when the Workflow CRD's schema would prune the extension fields
// (the API server silently drops unknown fields unless the schema preserves them).
func CheckCRDPreserves(crd *unstructured.Unstructured) error {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, _ := v.(map[string]any)
		if version["name"] != wfv1.SchemeGroupVersion.Version {
			continue
		}
		status, found, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties", "status")
		if !found {
			return fmt.Errorf("the Workflow CRD's %s schema has no status: it would prune wfguard's status fields; install config/crd/argoproj.io_workflows.yaml", version["name"])
		}
		if preserve, _ := status["x-kubernetes-preserve-unknown-fields"].(bool); preserve {
			return nil
		}
		props, _, _ := unstructured.NestedMap(status, "properties")
		var missing []string
		for _, k := range fieldNames {
			if _, ok := props[k]; !ok {
				missing = append(missing, "status."+k)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the Workflow CRD would prune %v (its status schema neither preserves unknown fields nor declares them); "+
				"install the minimal CRD from config/crd/argoproj.io_workflows.yaml", missing)
		}
		return nil
	}
	return fmt.Errorf("the Workflow CRD does not serve %s", wfv1.SchemeGroupVersion.Version)
}
