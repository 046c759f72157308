package controller

import (
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
}

// newDecoded keeps wf and ext, which the caller no longer modifies, as the copy a pass starts from.
func newDecoded(resourceVersion string, wf *wfv1.Workflow, ext extstatus.Extensions) (*decoded, error) {
	encoded, err := extstatus.Encode(wf, ext)
	if err != nil {
		return nil, err
	}
	return &decoded{uid: wf.UID, resourceVersion: resourceVersion, wf: wf, ext: ext, encoded: encoded}, nil
}

// decodeCache keeps the decoding of each running workflow's current cache copy: a key is reconciled many
// times per resourceVersion (every pod and result event), and the JSON round trips of decoding were the
// largest cost of a pass.
type decodeCache struct {
	inflater *extstatus.Inflater // nil: extstatus's default
	mu       sync.Mutex
	byKey    map[string]*decoded
}

// decode returns a pass's own copy of u's workflow and extensions, and the shared decoding they came from.
func (d *decodeCache) decode(key string, u *unstructured.Unstructured) (*wfv1.Workflow, extstatus.Extensions, *decoded, error) {
	d.mu.Lock()
	e := d.byKey[key]
	d.mu.Unlock()
	if e == nil || e.uid != u.GetUID() || e.resourceVersion != u.GetResourceVersion() {
		wf, ext, err := d.inflater.FromUnstructured(u)
		if err != nil {
			return nil, ext, nil, err
		}
		if e, err = newDecoded(u.GetResourceVersion(), wf, ext); err != nil {
			return nil, ext, nil, err
		}
		d.mu.Lock()
		if d.byKey == nil {
			d.byKey = map[string]*decoded{}
		}
		d.byKey[key] = e
		d.mu.Unlock()
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
func (d *decodeCache) forget(key string) {
	d.mu.Lock()
	delete(d.byKey, key)
	d.mu.Unlock()
}

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

	mu    sync.Mutex
	used  int64
	byKey map[string]*list.Element // of *completedDecoding
	lru   list.List                // most recently used first
}

type completedDecoding struct {
	key             string
	uid             types.UID
	resourceVersion string
	wf              *wfv1.Workflow
	ext             extstatus.Extensions
	size            int64 // estimated decoded bytes
}

// decode returns u's workflow and extensions, shared with the later passes of the same version: the caller
// copies what it changes.
func (d *completedDecodes) decode(key string, u *unstructured.Unstructured) (*wfv1.Workflow, extstatus.Extensions, error) {
	if e := d.get(key, u); e != nil {
		return e.wf, e.ext, nil
	}
	wf, ext, size, err := d.inflater.Decode(u)
	if err != nil {
		return nil, ext, err
	}
	if compressed, _, _ := unstructured.NestedString(u.Object, "status", "compressedNodes"); compressed != "" {
		d.put(&completedDecoding{key: key, uid: u.GetUID(), resourceVersion: u.GetResourceVersion(), wf: wf, ext: ext, size: size})
	}
	return wf, ext, nil
}

func (d *completedDecodes) get(key string, u *unstructured.Unstructured) *completedDecoding {
	d.mu.Lock()
	defer d.mu.Unlock()
	el := d.byKey[key]
	if el == nil {
		return nil
	}
	e := el.Value.(*completedDecoding)
	if e.uid != u.GetUID() || e.resourceVersion != u.GetResourceVersion() {
		d.remove(el)
		return nil
	}
	d.lru.MoveToFront(el)
	return e
}

func (d *completedDecodes) put(e *completedDecoding) {
	budget := d.budget
	if budget <= 0 {
		budget = defaultCompletedDecodeBudget
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el := d.byKey[e.key]; el != nil {
		d.remove(el)
	}
	if e.size > budget {
		return
	}
	if d.byKey == nil {
		d.byKey = map[string]*list.Element{}
	}
	d.byKey[e.key] = d.lru.PushFront(e)
	d.used += e.size
	for d.used > budget {
		d.remove(d.lru.Back())
	}
}

// forget drops a key: its workflow runs again or is gone.
func (d *completedDecodes) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if el := d.byKey[key]; el != nil {
		d.remove(el)
	}
}

func (d *completedDecodes) remove(el *list.Element) {
	e := d.lru.Remove(el).(*completedDecoding)
	delete(d.byKey, e.key)
	d.used -= e.size
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
