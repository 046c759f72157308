package controller

import (
	"cmp"
	"container/list"
	"maps"
	"reflect"
	"slices"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/extstatus"
)

// decoded is one cache copy of a running workflow decoded for passes: the typed workflow, its extensions
// and their encoding as persist would write them. It is read-only; each pass gets its own deep copy.
type decoded struct {
	uid             types.UID
	resourceVersion string
	wf              *wfv1.Workflow
	ext             extstatus.Extensions
	// encoded is extstatus.Encode(wf, ext): a pass whose encoding is the same bytes changed nothing, and a
	// conflicting write re-applies its difference from these.
	encoded []byte
	// size is what the entry holds: the decoding as extstatus estimates it, and encoded.
	size int64
}

// newDecoded keeps wf and ext, which the caller no longer modifies, as the copy a pass starts from;
// decodedSize is the decoding's estimated size (extstatus.Inflater.Decode).
func newDecoded(resourceVersion string, wf *wfv1.Workflow, ext extstatus.Extensions, decodedSize int64) (*decoded, error) {
	encoded, err := extstatus.Encode(wf, ext)
	if err != nil {
		return nil, err
	}
	return &decoded{uid: wf.UID, resourceVersion: resourceVersion, wf: wf, ext: ext, encoded: encoded,
		size: decodedSize + int64(cap(encoded))}, nil
}

// defaultRunningDecodeBudget bounds what decodeCache keeps, in estimated decoded bytes. A running
// workflow's decoding is kept for its next passes, but one may take up to extstatus.DefaultMaxDecoded
// (128 MiB): without a bound, a few users' large workflows together exhaust the controller's memory. The
// 50-node workflow of the benchmarks is taken for 56 KiB (BenchmarkTheHeapADecodedWorkflowKeeps measures
// 43 KiB held), so 1 GiB keeps about 18,000 of them before any is decoded again, the engine's 10,000-item
// fan-out (9.5 MiB) about 100 times, the largest decoding 8 times.
const defaultRunningDecodeBudget = 1 << 30

// decodeCache keeps the decoding of each running workflow's current cache copy: a key is reconciled many
// times per resourceVersion (every pod and result event), and the JSON round trips of decoding were the
// largest cost of a pass. Past its budget the least recently used decodings go: their next pass decodes
// again, correctly and more slowly.
type decodeCache struct {
	inflater *extstatus.Inflater // nil: extstatus's default
	budget   int64               // estimated decoded bytes; 0: defaultRunningDecodeBudget
	kept     sizedLRU[*decoded]
}

// decode returns a pass's own copy of u's workflow and extensions, and the shared decoding they came from.
func (d *decodeCache) decode(key string, u *unstructured.Unstructured) (*wfv1.Workflow, extstatus.Extensions, *decoded, error) {
	e, ok := d.kept.get(key, u)
	if !ok {
		wf, ext, size, err := d.inflater.Decode(u)
		if err != nil {
			return nil, ext, nil, err
		}
		if e, err = newDecoded(u.GetResourceVersion(), wf, ext, size); err != nil {
			return nil, ext, nil, err
		}
		d.kept.put(key, u, e, e.size, cmp.Or(d.budget, defaultRunningDecodeBudget))
	}
	return e.wf.DeepCopy(), copyExtensions(e.ext), e, nil
}

// unchangedBy reports whether a pass left the workflow and extensions exactly as decoded, so persisting
// needs no encoding at all. Exactly: a copy that differs only where the encoding does not show it (an empty
// map for none, an instant in another location) is found unchanged by persist's comparison of the
// encodings instead. A semantic walk here, run on every pass that did change something, cost 4.5% of the
// controller's CPU in the throughput scenario and never once decided a pass there (0 of ~1,500 differing
// passes).
func (l *decoded) unchangedBy(wf *wfv1.Workflow, ext *extstatus.Extensions) bool {
	return reflect.DeepEqual(l.ext, *ext) && reflect.DeepEqual(l.wf, wf)
}

// forget drops a key: its workflow completed or is gone.
func (d *decodeCache) forget(key string) { d.kept.forget(key) }

// defaultCompletedDecodeBudget bounds the decodings completedDecodes keeps, in estimated decoded bytes
// (extstatus.DecodedSize): their nodes JSON said nothing of what they hold. 160 MiB keeps what the 64 MiB of
// JSON kept before of the engine's nodes, which decode to 2.3 to 3 times their JSON: 16 of the 10,000-item
// fan-out (9.5 MiB each).
const defaultCompletedDecodeBudget = 160 << 20

// completedDecodes keeps, per (UID, resourceVersion), the decoding of completed workflows whose nodes are
// stored compressed, least recently used out first past its budget. A completed workflow is passed again
// for every action naming it, pod event and resync; inflating a 10,000-node fan-out each time cost more
// than the pass. Plain nodes cost only a JSON round trip and are not kept: decodings of the 10,000
// completed workflows of docs/performance.md's memory scenario would double what their cache holds.
type completedDecodes struct {
	inflater *extstatus.Inflater // nil: extstatus's default
	budget   int64               // estimated decoded bytes; 0: defaultCompletedDecodeBudget
	kept     sizedLRU[completedDecoding]
}

type completedDecoding struct {
	wf  *wfv1.Workflow
	ext extstatus.Extensions
}

// decode returns u's workflow and extensions, shared with the later passes of the same version: the caller
// copies what it changes.
func (d *completedDecodes) decode(key string, u *unstructured.Unstructured) (*wfv1.Workflow, extstatus.Extensions, error) {
	if e, ok := d.kept.get(key, u); ok {
		return e.wf, e.ext, nil
	}
	wf, ext, size, err := d.inflater.Decode(u)
	if err != nil {
		return nil, ext, err
	}
	if compressed, _, _ := unstructured.NestedString(u.Object, "status", "compressedNodes"); compressed != "" {
		d.kept.put(key, u, completedDecoding{wf: wf, ext: ext}, size, cmp.Or(d.budget, defaultCompletedDecodeBudget))
	}
	return wf, ext, nil
}

// forget drops a key: its workflow runs again or is gone.
func (d *completedDecodes) forget(key string) { d.kept.forget(key) }

// sizedLRU keeps a value per key for one version (UID and resourceVersion) of its workflow, within a budget
// of estimated decoded bytes, least recently used out first. Safe for concurrent use.
type sizedLRU[V any] struct {
	mu    sync.Mutex
	used  int64
	byKey map[string]*list.Element // of *sizedEntry[V]
	lru   list.List                // most recently used first
}

type sizedEntry[V any] struct {
	key             string
	uid             types.UID
	resourceVersion string
	size            int64
	value           V
}

// get returns the value kept for u's version of key; one kept for another version is dropped.
func (c *sizedLRU[V]) get(key string, u *unstructured.Unstructured) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var none V
	el := c.byKey[key]
	if el == nil {
		return none, false
	}
	e := el.Value.(*sizedEntry[V])
	if e.uid != u.GetUID() || e.resourceVersion != u.GetResourceVersion() {
		c.remove(el)
		return none, false
	}
	c.lru.MoveToFront(el)
	return e.value, true
}

// put keeps v of size bytes for u's version of key, replacing what the key held, and drops the least
// recently used past budget. A value larger than the whole budget is not kept.
func (c *sizedLRU[V]) put(key string, u *unstructured.Unstructured, v V, size, budget int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.remove(el)
	}
	if size > budget {
		return
	}
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	c.byKey[key] = c.lru.PushFront(&sizedEntry[V]{key: key, uid: u.GetUID(), resourceVersion: u.GetResourceVersion(), size: size, value: v})
	c.used += size
	for c.used > budget {
		c.remove(c.lru.Back())
	}
}

func (c *sizedLRU[V]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.remove(el)
	}
}

func (c *sizedLRU[V]) remove(el *list.Element) {
	e := c.lru.Remove(el).(*sizedEntry[V])
	delete(c.byKey, e.key)
	c.used -= e.size
}

func copyExtensions(ext extstatus.Extensions) extstatus.Extensions {
	out := ext
	if ext.Suspended != nil {
		v := *ext.Suspended
		out.Suspended = &v
	}
	out.AppliedActions = slices.Clone(ext.AppliedActions)
	out.ResultWaits = maps.Clone(ext.ResultWaits)
	out.RetryCleanupSince = ext.RetryCleanupSince.DeepCopy()
	return out
}
