package memoize

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfguard/wfguard/provenance"
)

// Trust says which entries of a cache decide a node's outputs.
type Trust string

const (
	// TrustAny counts every entry, whoever wrote it: argo's behaviour, the default.
	TrustAny Trust = "any"
	// TrustSealed counts only the entries the controller saved (a valid seal of its record key): an entry
	// anyone else wrote into the ConfigMap is a miss, and the node runs.
	TrustSealed Trust = "sealed"
)

// ParseTrust reads a --memoize-trust value.
func ParseTrust(s string) (Trust, error) {
	switch t := Trust(s); t {
	case TrustAny, TrustSealed:
		return t, nil
	}
	return "", fmt.Errorf("memoize trust must be %s or %s, got %q", TrustAny, TrustSealed, s)
}

// Why an entry was ignored (the label of wfguard_memoization_entries_ignored_total).
const (
	// IgnoredUnsealed: the entry carries no seal (argo's entries, and anyone's who left it out).
	IgnoredUnsealed = "unsealed"
	// IgnoredInvalidSeal: the seal is not the controller's over this entry (forged, altered, copied from
	// another key or cache, or made with another record key).
	IgnoredInvalidSeal = "invalid_seal"
)

// Provenance is what a cache does about who wrote an entry. The zero value saves unsealed entries and
// counts every entry, as argo does.
type Provenance struct {
	// Key seals the entries the controller saves (with either Trust, so that turning TrustSealed on later
	// re-runs nothing the controller saved); nil saves them unsealed.
	Key   *provenance.Key
	Trust Trust
}

// seal is the seal of an entry about to be saved, "" without a key.
func (p Provenance) seal(namespace, cache, key string, e Entry) (string, error) {
	if p.Key == nil {
		return "", nil
	}
	fields, err := sealedFields(namespace, cache, key, e)
	if err != nil {
		return "", err
	}
	return p.Key.Seal(provenance.PurposeMemoEntry, fields...), nil
}

// distrust is why an entry does not count under TrustSealed, "" when it counts.
func (p Provenance) distrust(namespace, cache, key string, e *Entry) string {
	if p.Trust != TrustSealed {
		return ""
	}
	if e.Seal == "" {
		return IgnoredUnsealed
	}
	fields, err := sealedFields(namespace, cache, key, *e)
	if err != nil || p.Key == nil || !p.Key.Verify(e.Seal, provenance.PurposeMemoEntry, fields...) {
		return IgnoredInvalidSeal
	}
	return ""
}

// sealedFields are what an entry's seal vouches for: where it is (namespace, ConfigMap, key), the node that
// saved it, its outputs, and its creation time, which maxAge is judged by (unsealed, whoever may update the
// ConfigMap could keep an old entry young for ever). The last-hit time is not among them: every hit
// rewrites it.
func sealedFields(namespace, cache, key string, e Entry) ([]string, error) {
	outputs, err := json.Marshal(e.Outputs)
	if err != nil {
		return nil, fmt.Errorf("encoding the outputs of cache entry %s/%s/%s to seal them: %w", namespace, cache, key, err)
	}
	return []string{namespace, cache, key, e.NodeID, string(outputs), e.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
}
