package extstatus

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/file"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func workflowWithNodes(n int) *wfv1.Workflow {
	wf := &wfv1.Workflow{}
	wf.Name, wf.Namespace = "wf", "ns"
	wf.Status.Phase = wfv1.WorkflowRunning
	wf.Status.Nodes = wfv1.Nodes{}
	for i := range n {
		id := fmt.Sprintf("wf-%d", i)
		wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: fmt.Sprintf("wf[0].fan(%d:%d)", i, i), Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded}
	}
	return wf
}

func TestNodesAreCompressedOnlyWhenTheWorkflowNearsTheLimit(t *testing.T) {
	small, err := ToUnstructured(workflowWithNodes(2), Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, body, err := Fit(small, DefaultMaxWorkflowSize); err != nil || got != small || !encodes(t, body, small) {
		t.Errorf("a workflow under the limit is written as it is, its body its encoding: %v", err)
	}

	large, err := ToUnstructured(workflowWithNodes(10000), Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := large.MarshalJSON()
	limit := len(data) / 2
	fitted, body, err := Fit(large, limit)
	if err != nil {
		t.Fatalf("10,000 nodes compress under half their size: %v", err)
	}
	if len(body) > limit || !encodes(t, body, fitted) {
		t.Errorf("the body to send is not the compressed workflow's encoding under the limit (%d bytes)", len(body))
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(fitted.Object, "status", "nodes"); found {
		t.Error("a compressed workflow still has status.nodes")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(large.Object, "status", "nodes"); !found {
		t.Error("Fit modified its input")
	}
	compressed, _, _ := unstructured.NestedString(fitted.Object, "status", "compressedNodes")
	// argo's own reader decodes what we write.
	argoJSON, err := file.DecodeDecompressString(compressed)
	if err != nil || !strings.Contains(argoJSON, `"wf-9999"`) {
		t.Errorf("argo cannot read status.compressedNodes: %v", err)
	}
	wf, _, err := FromUnstructured(fitted)
	if err != nil {
		t.Fatal(err)
	}
	if len(wf.Status.Nodes) != 10000 || wf.Status.CompressedNodes != "" {
		t.Errorf("FromUnstructured inflates the nodes: got %d nodes, compressedNodes %d bytes", len(wf.Status.Nodes), len(wf.Status.CompressedNodes))
	}
	if err := InflateUnstructured(fitted); err != nil {
		t.Fatal(err)
	}
	if nodes, _, _ := unstructured.NestedMap(fitted.Object, "status", "nodes"); len(nodes) != 10000 {
		t.Errorf("InflateUnstructured restores %d nodes, want 10000", len(nodes))
	}

	bare, err := ToUnstructured(workflowWithNodes(0), Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(bare.Object, "status", "nodes")
	if got, body, err := Fit(bare, 10); err != nil || got != bare || !encodes(t, body, bare) {
		t.Errorf("an object without nodes over the limit is left to the API server: %v", err)
	}

	_, _, err = Fit(large, 1000)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "over the limit of 1000") {
		t.Errorf("a workflow over the limit even compressed: err = %v, want ErrTooLarge with the sizes", err)
	}
}

func TestEachCompressionHoldsOnlyItsOwnWorkflowsNodes(t *testing.T) {
	// Fit reuses its compressors: workflows compressed one after another, concurrently too, and after one
	// that did not fit, each read back exactly their own nodes.
	var wg sync.WaitGroup
	for _, n := range []int{3000, 5000, 4000, 6000} {
		wg.Go(func() {
			u, err := ToUnstructured(workflowWithNodes(n), Extensions{})
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, err := Fit(u, 1000); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d nodes under 1,000 bytes: err = %v, want ErrTooLarge", n, err)
			}
			data, _ := u.MarshalJSON()
			fitted, _, err := Fit(u, len(data)/2)
			if err != nil {
				t.Error(err)
				return
			}
			wf, _, err := FromUnstructured(fitted)
			if err != nil {
				t.Error(err)
				return
			}
			last := fmt.Sprintf("wf-%d", n-1)
			if _, ok := wf.Status.Nodes[last]; len(wf.Status.Nodes) != n || !ok {
				t.Errorf("a workflow of %d nodes read back %d nodes (its last, %s, found: %t)", n, len(wf.Status.Nodes), last, ok)
			}
		})
	}
	wg.Wait()
}

// encodes reports whether body is u's encoding.
func encodes(t *testing.T, body []byte, u *unstructured.Unstructured) bool {
	t.Helper()
	want, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(body, want)
}
