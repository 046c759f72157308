package extstatus

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/file"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wfguard/wfguard/internal/zipbomb"
)

// stating rewrites the size compressed's gzip trailer states (its CRC is left as it was).
func stating(t testing.TB, compressed string, size int) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(compressed)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(raw[len(raw)-4:], uint32(size))
	return base64.StdEncoding.EncodeToString(raw)
}

func gzipLen(t testing.TB, compressed string) int {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(compressed)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// reads records what an Inflater reports, safe for concurrent use.
type reads struct {
	mu  sync.Mutex
	all []Inflation
}

func (r *reads) observe(i Inflation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, i)
}

func (r *reads) last() Inflation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return Inflation{}
	}
	return r.all[len(r.all)-1]
}

func TestAnInflaterReadsLegitimateNodesAndRefusesBombs(t *testing.T) {
	fanOut, err := compress(workflowWithNodes(10000).Status.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := InflatedSize(fanOut) / gzipLen(t, fanOut); got*4 > DefaultInflateRatio {
		t.Fatalf("10,000 nodes compress %d:1, within four times of the bound %d:1: the bound leaves no margin", got, DefaultInflateRatio)
	}
	truthful := zipbomb.CompressedNodes(8<<20, 0)                           // ~8 KiB of gzip stating 8 MiB
	limit := DefaultInflateFloor + DefaultInflateRatio*gzipLen(t, truthful) // ~2.6 MiB
	lying := zipbomb.CompressedNodes(8<<20, limit)                          // claims exactly what is allowed
	for _, tc := range []struct {
		sentence   string
		max        int
		compressed string
		wantNodes  int
		outcome    string
		err        string // substring; "" for none
		inflated   func(int) bool
	}{
		{"the nodes of a 10,000-node fan-out inflate", 0, fanOut, 10000, InflateInflated, "",
			func(n int) bool { return n == InflatedSize(fanOut) }},
		{"a tiny input far over the ratio inflates under the floor", 0, zipbomb.CompressedNodes(100<<10, 0), 1, InflateInflated, "",
			func(n int) bool { return n > 100<<10 }},
		{"a 1000:1 bomb whose trailer tells the truth is refused unread", 0, truthful, 0, InflateOverRatio, "over the",
			func(n int) bool { return n == 0 }},
		{"a bomb whose trailer states what is allowed is refused one byte past it", 0, lying, 0, InflateSizeMismatch,
			"inflate past the", func(n int) bool { return n == limit+1 }},
		{"a bomb stating more than any workflow's nodes may take is refused unread", 2 << 20, truthful, 0, InflateOverSize,
			"any workflow's nodes", func(n int) bool { return n == 0 }},
		{"a trailer stating more than the data holds is corrupt", 0, stating(t, fanOut, InflatedSize(fanOut)+10), 0, InflateCorrupt,
			"inflating", nil},
		{"not base64 is corrupt", 0, "!!!", 0, InflateCorrupt, "not base64", nil},
		{"not gzip is corrupt", 0, base64.StdEncoding.EncodeToString([]byte("plain text, not gzip at all")), 0, InflateCorrupt, "inflating", nil},
		{"gzip of something other than a node map is corrupt", 0, file.CompressEncodeString(`[1,2]`), 0, InflateCorrupt, "decoding the inflated nodes", nil},
	} {
		var seen reads
		i := NewInflater(InflaterConfig{Max: tc.max, Observe: seen.observe})
		wf := &wfv1.Workflow{}
		wf.Namespace, wf.Name = "ns", "wf"
		wf.Status.CompressedNodes = tc.compressed
		err := i.InflateNodes(wf)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.sentence, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "workflow ns/wf")):
			t.Errorf("%s: err = %v, want it to name the workflow and say %q", tc.sentence, err, tc.err)
		}
		var refused *RefusedError
		if isRefusal := tc.outcome == InflateOverRatio || tc.outcome == InflateOverSize || tc.outcome == InflateSizeMismatch; errors.As(err, &refused) != isRefusal ||
			(isRefusal && refused.Reason != tc.outcome) {
			t.Errorf("%s: err = %#v, want a RefusedError %s: %t", tc.sentence, err, tc.outcome, isRefusal)
		}
		if len(wf.Status.Nodes) != tc.wantNodes {
			t.Errorf("%s: %d nodes, want %d", tc.sentence, len(wf.Status.Nodes), tc.wantNodes)
		}
		got := seen.last()
		if got.Outcome != tc.outcome || (tc.inflated != nil && !tc.inflated(got.Inflated)) {
			t.Errorf("%s: observed %+v, want outcome %s", tc.sentence, got, tc.outcome)
		}
	}
}

func TestTheSameFailingBytesAreNeverInflatedTwice(t *testing.T) {
	truthful := zipbomb.CompressedNodes(8<<20, 0)
	lying := zipbomb.CompressedNodes(8<<20, DefaultInflateFloor)
	notNodes := file.CompressEncodeString(`{"a": 1}`)
	for _, tc := range []struct {
		sentence   string
		compressed string
		first      string
	}{
		{"a bomb whose trailer lies is refused from memory the second time", lying, InflateSizeMismatch},
		{"a bomb whose trailer tells the truth is refused from memory the second time", truthful, InflateOverRatio},
		{"nodes that do not decode fail from memory the second time", notNodes, InflateCorrupt},
	} {
		var seen reads
		i := NewInflater(InflaterConfig{Observe: seen.observe})
		var errs []error
		for range 3 {
			wf := &wfv1.Workflow{}
			wf.Status.CompressedNodes = tc.compressed
			errs = append(errs, i.InflateNodes(wf))
		}
		want := []Inflation{{Outcome: tc.first, Inflated: seen.all[0].Inflated}, {Outcome: InflateFailedBefore}, {Outcome: InflateFailedBefore}}
		if len(seen.all) != 3 || seen.all[1] != want[1] || seen.all[2] != want[2] || seen.all[0].Outcome != tc.first {
			t.Errorf("%s: reads %+v, want %+v", tc.sentence, seen.all, want)
		}
		if errs[0] == nil || errs[1] == nil || errs[0].Error() != errs[1].Error() || errs[1].Error() != errs[2].Error() {
			t.Errorf("%s: errors %v, want the first one each time", tc.sentence, errs)
		}
	}

	t.Run("the memory is bounded: past it the oldest failure is read again", func(t *testing.T) {
		var seen reads
		i := NewInflater(InflaterConfig{Remembered: 2, Observe: seen.observe})
		for _, s := range []string{`[1]`, `[2]`, `[3]`, `[1]`, `[3]`} {
			wf := &wfv1.Workflow{}
			wf.Status.CompressedNodes = file.CompressEncodeString(s)
			_ = i.InflateNodes(wf)
		}
		var got []string
		for _, r := range seen.all {
			got = append(got, r.Outcome)
		}
		if want := []string{InflateCorrupt, InflateCorrupt, InflateCorrupt, InflateCorrupt, InflateFailedBefore}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("outcomes %v, want %v", got, want)
		}
	})
}

func TestTheBudgetBoundsTheBytesInflatedAtOnce(t *testing.T) {
	nodes, err := compress(workflowWithNodes(2000).Status.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	inflate := func(i *Inflater) error {
		wf := &wfv1.Workflow{}
		wf.Status.CompressedNodes = nodes
		return i.InflateNodes(wf)
	}

	t.Run("with the budget in use and no wait, an inflation fails as transient and is not remembered", func(t *testing.T) {
		var seen reads
		i := NewInflater(InflaterConfig{BudgetWait: -1, Observe: seen.observe})
		if !i.budget.TryAcquire(i.cfg.Budget) {
			t.Fatal("taking the whole budget")
		}
		if err := inflate(i); !errors.Is(err, ErrInflateBudget) || seen.last().Outcome != InflateBudgetFull {
			t.Errorf("err = %v, observed %+v; want ErrInflateBudget, budget_full", err, seen.last())
		}
		i.budget.Release(i.cfg.Budget)
		if err := inflate(i); err != nil || seen.last().Outcome != InflateInflated {
			t.Errorf("once released: err = %v, observed %+v; want it inflated", err, seen.last())
		}
	})

	t.Run("an inflation waits for room and goes on once it is released", func(t *testing.T) {
		clock := clocktesting.NewFakeClock(time.Now())
		i := NewInflater(InflaterConfig{BudgetWait: time.Hour, Clock: clock})
		if !i.budget.TryAcquire(i.cfg.Budget) {
			t.Fatal("taking the whole budget")
		}
		done := make(chan error)
		go func() { done <- inflate(i) }()
		eventually(t, "the inflation waiting on the clock", clock.HasWaiters)
		i.budget.Release(i.cfg.Budget)
		if err := <-done; err != nil {
			t.Errorf("err = %v, want it inflated once the budget was released", err)
		}
	})

	t.Run("an inflation that finds no room within its wait fails as transient", func(t *testing.T) {
		clock := clocktesting.NewFakeClock(time.Now())
		i := NewInflater(InflaterConfig{BudgetWait: time.Minute, Clock: clock})
		if !i.budget.TryAcquire(i.cfg.Budget) {
			t.Fatal("taking the whole budget")
		}
		defer i.budget.Release(i.cfg.Budget)
		done := make(chan error)
		go func() { done <- inflate(i) }()
		eventually(t, "the inflation waiting on the clock", clock.HasWaiters)
		clock.Step(time.Minute)
		if err := <-done; !errors.Is(err, ErrInflateBudget) || !strings.Contains(err.Error(), "waited 1m0s") {
			t.Errorf("err = %v, want ErrInflateBudget after the wait", err)
		}
	})

	t.Run("concurrent inflations never hold more than the budget together, JSON and decoding", func(t *testing.T) {
		size := InflatedSize(nodes)
		decoded := decodedSize(inflated(t, nodes), nodesShape(), 0)
		each := int64(size) + 1 + decoded
		// Room for two at once: eight goroutines must take turns.
		i := NewInflater(InflaterConfig{Max: size, MaxDecoded: decoded, Budget: 2 * each, BudgetWait: time.Hour})
		var held, most atomic.Int64
		decode := func(data []byte) error {
			now := held.Add(each)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			defer held.Add(-each)
			var got wfv1.Nodes
			return json.Unmarshal(data, &got)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := i.inflate(nodes, nodesShape(), decode); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > i.cfg.Budget || m < each {
			t.Errorf("at most %d bytes held at once, want between %d and the budget %d", m, each, i.cfg.Budget)
		}
	})
}

// inflated is the nodes JSON compressed holds.
func inflated(t testing.TB, compressed string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(compressed)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestWhatWfguardCompressesItCanReadBack(t *testing.T) {
	// One node whose message is a run of one byte compresses ~1,000:1: Fit refuses to store it, so the
	// workflow ends Error (the status cannot be stored) instead of being unreadable on its next pass.
	wf := workflowWithNodes(1)
	for id, n := range wf.Status.Nodes {
		n.Message = strings.Repeat("a", 4<<20)
		wf.Status.Nodes[id] = n
	}
	u, err := ToUnstructured(wf, Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Fit(u, DefaultMaxWorkflowSize); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "may inflate to") {
		t.Errorf("Fit: err = %v, want ErrTooLarge saying the nodes would not be read back", err)
	}
	data, err := Encode(wf, Extensions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FitEncoded(wf, Extensions{}, data, DefaultMaxWorkflowSize); !errors.Is(err, ErrTooLarge) {
		t.Errorf("FitEncoded: err = %v, want ErrTooLarge", err)
	}
}

func TestWithoutNodesInflatesNothing(t *testing.T) {
	wf := workflowWithNodes(3)
	wf.Status.Phase = wfv1.WorkflowSucceeded
	u, err := ToUnstructured(wf, Extensions{AppliedActions: []AppliedAction{{UID: "a", Name: "a", Outcome: "Succeeded"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Bytes that fail if anything reads them.
	if err := unstructured.SetNestedField(u.Object, "!!!", "status", "compressedNodes"); err != nil {
		t.Fatal(err)
	}
	got, ext, err := WithoutNodes(u)
	if err != nil || got.Name != "wf" || got.Status.Phase != wfv1.WorkflowSucceeded || len(got.Status.Nodes) != 0 ||
		got.Status.CompressedNodes != "" || len(ext.AppliedActions) != 1 {
		t.Fatalf("WithoutNodes = %d nodes, %d bytes compressed, %d records, %v; want the workflow and its record without nodes",
			len(got.Status.Nodes), len(got.Status.CompressedNodes), len(ext.AppliedActions), err)
	}
	if nodes, _, _ := unstructured.NestedMap(u.Object, "status", "nodes"); len(nodes) != 3 {
		t.Error("WithoutNodes modified its input")
	}
}

// eventually polls cond, a state another goroutine reaches.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("never %s: %v", what, err)
	}
}
func TestAnInflaterRefusesNodesThatWouldDecodePastItsBound(t *testing.T) {
	fanOut, err := compress(engineFanOut(10000))
	if err != nil {
		t.Fatal(err)
	}
	// 600,000 empty artifacts: 1.8 MB of JSON, ~160 MiB decoded; padded to 100:1, half the inflate ratio.
	bomb := zipbomb.CompressedArtifacts(600000, DefaultInflateRatio/2)
	if InflatedSize(bomb) > DefaultInflateFloor+DefaultInflateRatio*gzipLen(t, bomb) {
		t.Fatal("the artifacts bomb is over the inflate ratio: it no longer tests what decoding allocates")
	}
	for _, tc := range []struct {
		sentence   string
		compressed string
		outcome    string
		nodes      int
	}{
		{"the engine's 10,000-pod fan-out is decoded", fanOut, InflateInflated, 10002},
		{"an array of empty artifacts under the inflate ratio is refused before it is decoded", bomb, InflateOverDecodedSize, 0},
	} {
		var seen reads
		i := NewInflater(InflaterConfig{Observe: seen.observe})
		wf := &wfv1.Workflow{}
		wf.Namespace, wf.Name = "ns", "wf"
		wf.Status.CompressedNodes = tc.compressed
		var size int64
		allocated := allocatedBy(func() { size, err = i.inflateNodes(wf) })
		var refused *RefusedError
		switch {
		case seen.last().Outcome != tc.outcome:
			t.Errorf("%s: observed %+v, want %s (err %v)", tc.sentence, seen.last(), tc.outcome, err)
		case len(wf.Status.Nodes) != tc.nodes:
			t.Errorf("%s: %d nodes, want %d", tc.sentence, len(wf.Status.Nodes), tc.nodes)
		case tc.outcome == InflateInflated && (err != nil || size <= 0):
			t.Errorf("%s: err %v, estimated size %d", tc.sentence, err, size)
		case tc.outcome == InflateOverDecodedSize && (!errors.As(err, &refused) || refused.Reason != InflateOverDecodedSize ||
			refused.Decoded <= DefaultMaxDecoded || !strings.Contains(err.Error(), "would decode to over")):
			t.Errorf("%s: err = %v, want a RefusedError over_decoded_size", tc.sentence, err)
		case tc.outcome == InflateOverDecodedSize && allocated > 32<<20:
			t.Errorf("%s: refusing allocated %d bytes, want no more than inflating does (its JSON is %d bytes)", tc.sentence, allocated, InflatedSize(bomb))
		}
		t.Logf("%s: %d bytes of gzip, %d of JSON, estimated %d decoded; %d bytes allocated", tc.sentence, gzipLen(t, tc.compressed),
			InflatedSize(tc.compressed), max(size, decodedOf(refused)), allocated)
		if tc.outcome == InflateOverDecodedSize {
			_, _ = i.inflateNodes(&wfv1.Workflow{Status: wfv1.WorkflowStatus{CompressedNodes: tc.compressed}})
			if seen.last().Outcome != InflateFailedBefore {
				t.Errorf("%s: read again: %+v, want it refused from memory", tc.sentence, seen.last())
			}
		}
	}
}

func decodedOf(refused *RefusedError) int64 {
	if refused == nil {
		return 0
	}
	return refused.Decoded
}
