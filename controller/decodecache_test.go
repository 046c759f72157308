package controller

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/zipbomb"
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

func TestRunningDecodingsAreKeptWithinABudgetLeastRecentlyUsedOutFirst(t *testing.T) {
	at := func(name, rv string) *unstructured.Unstructured {
		u := runningWorkflow(t, 50, rv)
		u.SetName(name)
		u.SetUID(types.UID(name + "-uid"))
		return u
	}
	a10, a11, b10, c10 := at("a", "10"), at("a", "11"), at("b", "10"), at("c", "10")
	var probe decodeCache
	_, _, one, err := probe.decode("ns/a", a10)
	if err != nil {
		t.Fatal(err)
	}
	if one.size < int64(len(one.encoded)) || one.size > 1<<20 {
		t.Fatalf("a 50-node workflow's decoding is taken for %d bytes (%d encoded)", one.size, len(one.encoded))
	}
	size := one.size
	type step struct {
		key string
		u   *unstructured.Unstructured
	}
	for _, tc := range []struct {
		sentence string
		budget   int64
		steps    []step
		decoded  int      // how many steps decoded rather than found their decoding kept
		kept     []string // most recent first
	}{
		{"the same version is decoded once", 0, []step{{"ns/a", a10}, {"ns/a", a10}, {"ns/a", a10}}, 1, []string{"ns/a"}},
		{"a new version replaces the old one's bytes", 0, []step{{"ns/a", a10}, {"ns/a", a11}, {"ns/a", a11}}, 2, []string{"ns/a"}},
		{"past the budget the least recently used goes first and is decoded again", 2*size + size/2,
			[]step{{"ns/a", a10}, {"ns/b", b10}, {"ns/a", a10}, {"ns/c", c10}, {"ns/a", a10}, {"ns/b", b10}}, 4, []string{"ns/b", "ns/a"}},
		{"a decoding larger than the whole budget is not kept, and each pass still gets it", size - 1,
			[]step{{"ns/a", a10}, {"ns/a", a10}}, 2, nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			d := &decodeCache{budget: tc.budget}
			seen := map[*decoded]bool{} // a decoding kept is handed out again
			for _, s := range tc.steps {
				wf, _, loaded, err := d.decode(s.key, s.u)
				if err != nil {
					t.Fatal(err)
				}
				if wf.Name != s.u.GetName() || len(wf.Status.Nodes) != 50 || loaded.resourceVersion != s.u.GetResourceVersion() {
					t.Fatalf("%s got the copy of %s at %s", s.key, wf.Name, loaded.resourceVersion)
				}
				seen[loaded] = true
				if tc.budget > 0 && d.kept.used > tc.budget {
					t.Fatalf("%d bytes kept, over the budget of %d", d.kept.used, tc.budget)
				}
			}
			if kept := d.kept.keys(t); len(seen) != tc.decoded || !slices.Equal(kept, tc.kept) {
				t.Errorf("decoded %d times, kept %v; want %d times, %v (most recent first)", len(seen), kept, tc.decoded, tc.kept)
			}
			d.kept.forgetAll(t)
		})
	}
}

// BenchmarkDecodingAWorkflowForAPass prices what a pass pays to get its copy of a 50-node workflow, the
// first time for a resourceVersion and when the decoding is cached.
func BenchmarkDecodingAWorkflowForAPass(b *testing.B) {
	u := runningWorkflow(b, 50, "10")
	b.Run("decoded every pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var defaultInflater *extstatus.Inflater
			wf, ext, size, err := defaultInflater.Decode(u)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := newDecoded(u.GetResourceVersion(), wf, ext, size); err != nil {
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

// BenchmarkPassesOverThousandsOfRunningWorkflows prices what a pass pays to get its copy when 2,000
// running 50-node workflows are each passed in turn at the same resourceVersion: the common case the
// decodings' budget must not slow.
func BenchmarkPassesOverThousandsOfRunningWorkflows(b *testing.B) {
	u := runningWorkflow(b, 50, "10")
	const workflows = 2000
	keys := make([]string, workflows)
	var d decodeCache
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/w-%d", i)
		if _, _, _, err := d.decode(keys[i], u); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, _, err := d.decode(keys[i%workflows], u); err != nil {
			b.Fatal(err)
		}
		i++
	}
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

// completedWorkflow is a cache copy of a completed workflow of n pod nodes at resourceVersion rv, its nodes
// stored compressed when compressed is set, and its decoding's estimated size.
func completedWorkflow(t *testing.T, name string, n int, rv string, compressed bool) (*unstructured.Unstructured, int64) {
	t.Helper()
	u := runningWorkflow(t, n, rv)
	u.SetName(name)
	u.SetUID(types.UID(name + "-uid"))
	_ = unstructured.SetNestedField(u.Object, string(wfv1.WorkflowSucceeded), "status", "phase")
	if !compressed {
		return u, 0
	}
	fitted, _, err := extstatus.Fit(u, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	var defaultInflater *extstatus.Inflater
	_, _, size, err := defaultInflater.Decode(fitted)
	if err != nil {
		t.Fatal(err)
	}
	return fitted, size
}

func TestCompletedWorkflowsWithCompressedNodesAreInflatedOncePerVersionWithinABudget(t *testing.T) {
	reads := func(d *completedDecodes, steps func(decode func(key string, u *unstructured.Unstructured))) []string {
		var got []string
		d.inflater = extstatus.NewInflater(extstatus.InflaterConfig{Observe: func(i extstatus.Inflation) { got = append(got, i.Outcome) }})
		steps(func(key string, u *unstructured.Unstructured) {
			if _, _, err := d.decode(key, u); err != nil && !errors.As(err, new(*extstatus.RefusedError)) {
				t.Fatal(err)
			}
		})
		return got
	}
	a10, size := completedWorkflow(t, "a", 200, "10", true)
	a11, _ := completedWorkflow(t, "a", 200, "11", true)
	b10, _ := completedWorkflow(t, "b", 200, "10", true)
	c10, _ := completedWorkflow(t, "c", 200, "10", true)
	plain, _ := completedWorkflow(t, "p", 200, "10", false)
	refused, _ := completedWorkflow(t, "r", 1, "10", false)
	_ = unstructured.SetNestedField(refused.Object, zipbomb.CompressedNodes(64<<20, 0), "status", "compressedNodes")
	unstructured.RemoveNestedField(refused.Object, "status", "nodes")
	for _, tc := range []struct {
		sentence string
		budget   int64
		steps    func(decode func(key string, u *unstructured.Unstructured))
		want     []string
		kept     []string
	}{
		{"the same version is inflated once", 0, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/a", a10)
			decode("ns/a", a10)
			decode("ns/a", a10)
		}, []string{"inflated"}, []string{"ns/a"}},
		{"a new version is inflated again and replaces the old", 0, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/a", a10)
			decode("ns/a", a11)
			decode("ns/a", a11)
		}, []string{"inflated", "inflated"}, []string{"ns/a"}},
		{"plain nodes are not kept: nothing is inflated", 0, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/p", plain)
			decode("ns/p", plain)
		}, nil, nil},
		{"refused nodes are not kept, and not read again", 0, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/r", refused)
			decode("ns/r", refused)
		}, []string{"over_ratio", "failed_before"}, nil},
		{"past the budget the least recently used goes first", 2 * size, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/a", a10)
			decode("ns/b", b10)
			decode("ns/a", a10) // a is now the most recent
			decode("ns/c", c10) // b goes
			decode("ns/a", a10)
			decode("ns/b", b10)
		}, []string{"inflated", "inflated", "inflated", "inflated"}, []string{"ns/b", "ns/a"}},
		{"a decoding larger than the whole budget is not kept", size - 1, func(decode func(string, *unstructured.Unstructured)) {
			decode("ns/a", a10)
			decode("ns/a", a10)
		}, []string{"inflated", "inflated"}, nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			d := &completedDecodes{budget: tc.budget}
			if got := reads(d, tc.steps); !slices.Equal(got, tc.want) {
				t.Errorf("reads %v, want %v", got, tc.want)
			}
			if kept := d.kept.keys(t); !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %v, want %v (most recent first)", kept, tc.kept)
			}
			d.kept.forgetAll(t)
		})
	}
}

// keys is what c keeps, most recently used first, once its accounting is checked: the sizes kept add up to
// what it counts as used, and every key is indexed.
func (c *sizedLRU[V]) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	used := int64(0)
	for el := c.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*sizedEntry[V])
		keys = append(keys, e.key)
		used += e.size
	}
	if used != c.used || len(c.byKey) != len(keys) {
		t.Errorf("%v kept in %d bytes and %d keys indexed; counted as used: %d", keys, used, len(c.byKey), c.used)
	}
	return keys
}

// forgetAll forgets every key c keeps and checks that nothing is left counted.
func (c *sizedLRU[V]) forgetAll(t *testing.T) {
	t.Helper()
	for _, key := range c.keys(t) {
		c.forget(key)
	}
	if c.used != 0 || c.lru.Len() != 0 {
		t.Errorf("after forgetting every key: %d bytes, %d entries", c.used, c.lru.Len())
	}
}
