package extstatus

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultMaxWorkflowSize is the encoded size of a workflow above which its nodes are stored compressed, and
// above which even compressed it is not written: argo's MAX_WORKFLOW_SIZE default (1 MiB), below etcd's
// default --max-request-bytes (1.5 MiB) so the rest of the request and its encoding overhead still fit.
const DefaultMaxWorkflowSize = 1 << 20

// gzipWriters reuses compressors: a new gzip.Writer allocates about 800 KB of state, most of what each
// write of a workflow over the size limit allocated (BenchmarkEncodingAChangedPassForAWrite in controller/).
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// ErrTooLarge is returned (wrapped) when a workflow does not fit the size limit even with compressed nodes.
var ErrTooLarge = errors.New("workflow is too large to store")

// InflateNodes moves argo's status.compressedNodes (base64 of gzip of the nodes JSON) back into
// status.nodes, through the package's default Inflater. Every reader of nodes goes through an Inflater
// (FromUnstructured calls it).
func InflateNodes(wf *wfv1.Workflow) error { return defaultInflater.InflateNodes(wf) }

// InflateNodes is the package's InflateNodes within i's bounds.
func (i *Inflater) InflateNodes(wf *wfv1.Workflow) error {
	_, err := i.inflateNodes(wf)
	return err
}

// inflateNodes is InflateNodes returning the estimated size of the nodes' decoding.
func (i *Inflater) inflateNodes(wf *wfv1.Workflow) (int64, error) {
	if wf.Status.CompressedNodes == "" {
		return 0, nil
	}
	var decoded int64
	if len(wf.Status.Nodes) == 0 {
		var err error
		decoded, err = i.orDefault().inflate(wf.Status.CompressedNodes, nodesShape(), func(data []byte) error { return json.Unmarshal(data, &wf.Status.Nodes) })
		if err != nil {
			return 0, fmt.Errorf("reading status.compressedNodes of workflow %s/%s: %w", wf.Namespace, wf.Name, err)
		}
	}
	wf.Status.CompressedNodes = ""
	return decoded, nil
}

// InflateUnstructured is InflateNodes for an object read from the API server as unstructured.
func InflateUnstructured(u *unstructured.Unstructured) error {
	return defaultInflater.InflateUnstructured(u)
}

// InflateUnstructured is the package's InflateUnstructured within i's bounds.
func (i *Inflater) InflateUnstructured(u *unstructured.Unstructured) error {
	compressed, _, _ := unstructured.NestedString(u.Object, "status", "compressedNodes")
	if compressed == "" {
		return nil
	}
	nodes, _, _ := unstructured.NestedMap(u.Object, "status", "nodes")
	if len(nodes) == 0 {
		_, err := i.orDefault().inflate(compressed, anyShape, func(data []byte) error { return json.Unmarshal(data, &nodes) })
		if err != nil {
			return fmt.Errorf("reading status.compressedNodes of workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		if err := unstructured.SetNestedMap(u.Object, nodes, "status", "nodes"); err != nil {
			return err
		}
	}
	unstructured.RemoveNestedField(u.Object, "status", "compressedNodes")
	return nil
}

// Fit returns u as it is to be written, and its encoding, the body to send (encoding it once more to send
// it was 4% of the controller's CPU): unchanged when its encoding is at most limit bytes, else a copy
// with status.nodes compressed into status.compressedNodes as argo stores them. When even that is over
// limit the error wraps ErrTooLarge and says both sizes. An object without nodes is returned unchanged:
// the limit bounds what the controller adds, the API server bounds the rest.
func Fit(u *unstructured.Unstructured, limit int) (*unstructured.Unstructured, []byte, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	if len(data) <= limit {
		return u, data, nil
	}
	nodes, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "nodes")
	if !found {
		// Nothing of ours to shrink: what is over the limit is what the user stored (the spec), which the
		// API server accepted; it judges this write too.
		return u, data, nil
	}
	packed, err := compress(nodes)
	if err != nil {
		return nil, nil, fmt.Errorf("compressing the nodes of workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	out := withoutNodes(u)
	out.Object["status"].(map[string]any)["compressedNodes"] = packed
	compressed, err := out.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding workflow %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	if len(compressed) > limit {
		return nil, nil, tooLarge(len(compressed), len(data), limit)
	}
	return out, compressed, nil
}

// FitEncoded is Fit for a workflow kept in argo's types: data is Encode(wf, ext), returned when it is at
// most limit bytes, else the encoding with the nodes compressed.
func FitEncoded(wf *wfv1.Workflow, ext Extensions, data []byte, limit int) ([]byte, error) {
	if len(data) <= limit || len(wf.Status.Nodes) == 0 {
		return data, nil // as Fit: without nodes, what is over the limit is the user's, for the API server to judge
	}
	packed, err := compress(wf.Status.Nodes)
	if err != nil {
		return nil, fmt.Errorf("compressing the nodes of workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	shrunk := *wf // a shallow copy: only its status's nodes are replaced
	shrunk.Status.Nodes, shrunk.Status.CompressedNodes = nil, packed
	compressed, err := Encode(&shrunk, ext)
	if err != nil {
		return nil, err
	}
	if len(compressed) > limit {
		return nil, tooLarge(len(compressed), len(data), limit)
	}
	return compressed, nil
}

func tooLarge(compressed, uncompressed, limit int) error {
	return fmt.Errorf("%w: %d bytes with compressed nodes (%d without), over the limit of %d",
		ErrTooLarge, compressed, uncompressed, limit)
}

// withoutNodes is a shallow copy of u down to status, without status.nodes and status.compressedNodes:
// nothing of u is modified.
func withoutNodes(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
	for k, v := range u.Object {
		out.Object[k] = v
	}
	status, _ := u.Object["status"].(map[string]any)
	rest := make(map[string]any, len(status)+1)
	for k, v := range status {
		if k != "nodes" && k != "compressedNodes" {
			rest[k] = v
		}
	}
	out.Object["status"] = rest
	return out
}

// compress is nodes as argo stores them in status.compressedNodes: base64 of gzip of their JSON.
func compress(nodes any) (string, error) {
	nodesJSON, err := json.Marshal(nodes)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer func() {
		zw.Reset(io.Discard) // the pool must not keep this workflow's bytes alive
		gzipWriters.Put(zw)
	}()
	zw.Reset(&buf)
	if _, err := zw.Write(nodesJSON); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	// Never store what the controller would refuse to read back: the workflow ends Error instead (I10).
	if limit := defaultInflater.limit(buf.Len()); len(nodesJSON) > limit {
		return "", fmt.Errorf("%w: its %d bytes of nodes compress to %d, more than the %d bytes that size may inflate to",
			ErrTooLarge, len(nodesJSON), buf.Len(), limit)
	}
	if limit := defaultInflater.cfg.MaxDecoded; decodedSize(nodesJSON, nodesShape(), limit) > limit {
		return "", fmt.Errorf("%w: its %d bytes of nodes would decode to more than the %d bytes a workflow's nodes may take",
			ErrTooLarge, len(nodesJSON), limit)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
