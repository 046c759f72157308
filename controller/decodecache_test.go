package controller

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/extstatus"
)

// runningWorkflow is a cache copy of a running workflow with n pod nodes, at resourceVersion rv.
func runningWorkflow(t testing.TB, n int, rv string) *unstructured.Unstructured {
	t.Helper()
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "w-uid", ResourceVersion: rv},
		Spec:   wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: &corev1.Container{Image: "alpine"}}}},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{}}}
	for i := range n {
		id := fmt.Sprintf("w-%d", i)
		wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: fmt.Sprintf("w[%d].s", i), Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded,
			Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}}}}
	}
	yes := true
	u, err := extstatus.ToUnstructured(wf, extstatus.Extensions{Suspended: &yes})
	if err != nil {
		t.Fatal(err)
	}
	u.SetResourceVersion(rv)
	return u
}

func TestTheDecodeCacheGivesEachPassItsOwnCopy(t *testing.T) {
	var d decodeCache
	u := runningWorkflow(t, 3, "10")
	wf, ext, loaded, err := d.decode("ns/w", u)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.unchangedBy(wf, &ext) {
		t.Fatal("an untouched pass is not recognized as unchanged")
	}
	// A pass changes its copies: the cached decoding stays as stored.
	n := wf.Status.Nodes["w-0"]
	n.Phase = wfv1.NodeFailed
	wf.Status.Nodes["w-0"] = n
	*ext.Suspended = false
	if loaded.unchangedBy(wf, &ext) {
		t.Error("a changed pass is taken for unchanged")
	}
	again, ext2, loaded2, err := d.decode("ns/w", u)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.Nodes["w-0"].Phase != wfv1.NodeSucceeded || !*ext2.Suspended || loaded2 != loaded {
		t.Errorf("the next pass at the same resourceVersion saw the previous pass's changes (node %s, suspended %t) or a new decoding",
			again.Status.Nodes["w-0"].Phase, *ext2.Suspended)
	}
	// A deferred pass's effects decide from the stored copy, never from the pass's own changes.
	if stored := storedCopy(&pass{loaded: loaded}); stored.Status.Nodes["w-0"].Phase != wfv1.NodeSucceeded {
		t.Error("the stored copy of resourceVersion 10 carries a pass's change")
	}
	// A new resourceVersion is decoded again.
	_, _, loaded3, err := d.decode("ns/w", runningWorkflow(t, 3, "11"))
	if err != nil {
		t.Fatal(err)
	}
	if loaded3 == loaded || loaded3.resourceVersion != "11" || len(loaded3.wf.Status.Nodes) != 3 {
		t.Errorf("resourceVersion 11 reused the decoding of 10")
	}
	if stored := storedCopy(&pass{loaded: loaded}); stored.ResourceVersion != "10" {
		t.Errorf("a pass that started from resourceVersion 10 got the stored copy of %s after 11 was decoded", stored.ResourceVersion)
	}
	d.forget("ns/w")
	if _, _, loaded4, err := d.decode("ns/w", runningWorkflow(t, 3, "11")); err != nil || loaded4 == loaded3 {
		t.Errorf("a forgotten key is not decoded again (%v)", err)
	}
}

// BenchmarkDecodingAWorkflowForAPass prices what a pass pays to get its copy of a 50-node workflow, the
// first time for a resourceVersion and when the decoding is cached.
func BenchmarkDecodingAWorkflowForAPass(b *testing.B) {
	u := runningWorkflow(b, 50, "10")
	b.Run("decoded every pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			wf, ext, err := extstatus.FromUnstructured(u)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := newDecoded(u.GetResourceVersion(), wf, ext); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached per resourceVersion", func(b *testing.B) {
		var d decodeCache
		b.ReportAllocs()
		for b.Loop() {
			wf, ext, loaded, err := d.decode("ns/w", u)
			if err != nil || !loaded.unchangedBy(wf, &ext) {
				b.Fatal(err)
			}
		}
	})
	b.Run("a pass that changed a node, found changed", func(b *testing.B) {
		var d decodeCache
		wf, ext, loaded := passChangingLastNode(b, &d, u, func(n *wfv1.NodeStatus) { n.Message = "a new message" })
		b.ReportAllocs()
		for b.Loop() {
			if loaded.unchangedBy(wf, &ext) {
				b.Fatal("a changed node found unchanged")
			}
		}
	})
}

func TestAPassCopyIsUnchangedOnlyIfExactlyItsDecodingAndASemanticTwinEncodesTheSame(t *testing.T) {
	decoded := func() *wfv1.Workflow {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "10"}}
		wf.Status.Phase = wfv1.WorkflowRunning
		wf.Status.StartedAt = metav1.NewTime(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC))
		wf.Status.Nodes = wfv1.Nodes{"n": {ID: "n", Phase: wfv1.NodeRunning}}
		return wf
	}
	for _, tc := range []struct {
		sentence string
		change   func(*wfv1.Workflow)
		// unchanged: persist skips encoding; sameEncoded: persist's comparison of the encodings finds
		// nothing to write.
		unchanged, sameEncoded bool
	}{
		{"an untouched copy is unchanged", func(*wfv1.Workflow) {}, true, true},
		{"an empty map where the decoding had none is encoded, and found the same", func(wf *wfv1.Workflow) { wf.Labels = map[string]string{} }, false, true},
		{"the same instant in another location is encoded, and found the same", func(wf *wfv1.Workflow) {
			wf.Status.StartedAt = metav1.NewTime(wf.Status.StartedAt.In(time.FixedZone("CET", 3600)))
		}, false, true},
		{"a node's new phase is a change", func(wf *wfv1.Workflow) {
			n := wf.Status.Nodes["n"]
			n.Phase = wfv1.NodeSucceeded
			wf.Status.Nodes["n"] = n
		}, false, false},
		{"a new message is a change", func(wf *wfv1.Workflow) { wf.Status.Message = "x" }, false, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			loaded, err := extstatus.ToUnstructured(decoded(), extstatus.Extensions{})
			if err != nil {
				t.Fatal(err)
			}
			var d decodeCache
			wf, ext, cached, err := d.decode("ns/w", loaded)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(wf)
			if got := cached.unchangedBy(wf, &ext); got != tc.unchanged {
				t.Errorf("unchanged = %t, want %t", got, tc.unchanged)
			}
			next, err := extstatus.Encode(wf, ext)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(cached.encoded, next); got != tc.sameEncoded {
				t.Errorf("the encoded objects are the same: %t, want %t", got, tc.sameEncoded)
			}
		})
	}
}

// BenchmarkEncodingAChangedPassForAWrite prices what persist does with a pass of a 50-node workflow that
// changed one node's host (the commonest change, informational), before the request: encode it, compare it
// with its stored copy, apply the coalescing rules and fit it to the size limit. It is the baseline for
// keeping argo's types end to end; "over the size limit" adds the compression a large workflow pays.
func BenchmarkEncodingAChangedPassForAWrite(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int
	}{
		{"under the size limit", extstatus.DefaultMaxWorkflowSize},
		{"over the size limit", 4 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var d decodeCache
			c := &Controller{opts: Options{StatusCoalesceWindow: time.Second}}
			wf, ext, loaded := passChangingLastNode(b, &d, runningWorkflow(b, 50, "10"), func(n *wfv1.NodeStatus) { n.HostNodeName = "node-2" })
			b.ReportAllocs()
			for b.Loop() {
				if loaded.unchangedBy(wf, &ext) {
					b.Fatal("a changed pass found unchanged")
				}
				wf.ResourceVersion = loaded.resourceVersion
				next, err := extstatus.Encode(wf, ext)
				if err != nil {
					b.Fatal(err)
				}
				if bytes.Equal(loaded.encoded, next) || onlyPruned(loaded, wf, &ext) {
					b.Fatal("a changed pass found unchanged")
				}
				if !informationalOnly(loaded.wf, wf, &loaded.ext, &ext) || c.coalescingWindow(loaded.wf, wf) != detailWindows*time.Second {
					b.Fatal("a node's new host is not an informational detail")
				}
				if body, err := extstatus.FitEncoded(wf, ext, next, bc.limit); err != nil || len(body) > bc.limit {
					b.Fatalf("fitting: %d bytes, %v", len(body), err)
				}
			}
		})
	}
}

// passChangingLastNode decodes u, a runningWorkflow of 50 nodes, through d and applies change to its last
// node, as a pass would.
func passChangingLastNode(b *testing.B, d *decodeCache, u *unstructured.Unstructured, change func(*wfv1.NodeStatus)) (*wfv1.Workflow, extstatus.Extensions, *decoded) {
	b.Helper()
	wf, ext, loaded, err := d.decode("ns/w", u)
	if err != nil {
		b.Fatal(err)
	}
	n := wf.Status.Nodes["w-49"]
	change(&n)
	wf.Status.Nodes["w-49"] = n
	return wf, ext, loaded
}

// BenchmarkTheHeapADecodedWorkflowKeeps reports the heap a running 50-node workflow's decoding keeps while
// it is cached, besides the informer's own copy: one entry per running workflow, so it grows with running
// work (the scale scenario holds 1,000).
func BenchmarkTheHeapADecodedWorkflowKeeps(b *testing.B) {
	u := runningWorkflow(b, 50, "10")
	const workflows = 200
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var d decodeCache
		for i := range workflows {
			if _, _, _, err := d.decode(fmt.Sprintf("ns/w-%d", i), u); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/workflows, "heapB/workflow")
		runtime.KeepAlive(&d)
	}
}
