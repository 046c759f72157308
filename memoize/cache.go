package memoize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigMaps is the API the cache needs.
type ConfigMaps interface {
	Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
}

// Entry is one cached result, in argo's JSON form (the ConfigMap's value under the key).
type Entry struct {
	NodeID            string        `json:"nodeID"`
	Outputs           *wfv1.Outputs `json:"outputs"`
	CreationTimestamp metav1.Time   `json:"creationTimestamp"`
	LastHitTimestamp  metav1.Time   `json:"lastHitTimestamp"`
	// Seal is the controller's seal (provenance.PurposeMemoEntry) over what the entry decides; a field argo
	// ignores, so argo still reads the entry (and drops the seal when it rewrites it).
	Seal string `json:"wfguardSeal,omitempty"`
}

// keyPattern is argo's rule for cache keys (they are ConfigMap data keys).
var keyPattern = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9]*$`)

// Cache is one memoization ConfigMap.
type Cache struct {
	Client          ConfigMaps
	Namespace, Name string
	Provenance      Provenance
}

// Found is what a lookup found.
type Found struct {
	// Outputs are the cached outputs of a hit.
	Outputs *wfv1.Outputs
	Hit     bool
	// Ignored says why an entry that would have been a hit did not count (IgnoredUnsealed,
	// IgnoredInvalidSeal); "" when none was ignored.
	Ignored string
}

// Lookup finds the entry cached under key. It is a hit when it exists, is younger than maxAge at now (any
// age without maxAge) and counts under the cache's Provenance. The hit time is recorded in the ConfigMap
// for every entry read, as argo does, except an ignored one: it is left for the save that replaces it.
func (c Cache) Lookup(ctx context.Context, key string, maxAge string, now time.Time) (Found, error) {
	var age time.Duration
	if maxAge != "" {
		d, err := time.ParseDuration(maxAge)
		if err != nil {
			return Found{}, fmt.Errorf("invalid maxAge: %s", err)
		}
		age = d
	}
	cm, entry, err := c.load(ctx, key)
	if err != nil || entry == nil {
		return Found{}, err
	}
	fresh := entry.NodeID != "" && (maxAge == "" || now.Sub(entry.CreationTimestamp.Time) <= age)
	if fresh {
		if why := c.Provenance.distrust(c.Namespace, c.Name, key, entry); why != "" {
			return Found{Ignored: why}, nil
		}
	}
	entry.LastHitTimestamp = metav1.NewTime(now)
	if err := put(cm, key, *entry); err != nil {
		return Found{}, err
	}
	if _, err := c.Client.Update(ctx, cm); err != nil {
		return Found{}, fmt.Errorf("recording a hit in memoization cache %s/%s: %w", c.Namespace, c.Name, err)
	}
	if !fresh {
		return Found{}, nil // expired, or not argo's entry of a node: not a hit
	}
	return Found{Outputs: entry.Outputs, Hit: true}, nil
}

// load reads the cache ConfigMap and the entry under key; no entry (or no ConfigMap) is nil without error.
func (c Cache) load(ctx context.Context, key string) (*corev1.ConfigMap, *Entry, error) {
	if !keyPattern.MatchString(key) {
		return nil, nil, fmt.Errorf("invalid cache key: %s", key)
	}
	cm, err := c.Client.Get(ctx, c.Namespace, c.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading memoization cache %s/%s: %w", c.Namespace, c.Name, err)
	}
	if err := checkLabel(cm); err != nil {
		return nil, nil, err
	}
	raw, ok := cm.Data[key]
	if !ok || raw == "" {
		return nil, nil, nil
	}
	var entry Entry
	if err := json.Unmarshal([]byte(raw), &entry); err != nil {
		return nil, nil, fmt.Errorf("malformed cache entry: could not unmarshal JSON; unable to parse: %w", err)
	}
	return cm, &entry, nil
}

// Save stores a succeeded node's outputs under key, creating the ConfigMap (with argo's label) if needed.
func (c Cache) Save(ctx context.Context, key, nodeID string, outputs *wfv1.Outputs, now time.Time) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("invalid cache key: %s", key)
	}
	cm, err := c.Client.Get(ctx, c.Namespace, c.Name)
	switch {
	case apierrors.IsNotFound(err):
		cm, err = c.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name,
			Labels: map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapCache}}})
		if err != nil {
			return fmt.Errorf("could not save to config map cache: %w", err)
		}
	case err != nil:
		return fmt.Errorf("reading memoization cache %s/%s: %w", c.Namespace, c.Name, err)
	default:
		if err := checkLabel(cm); err != nil {
			return err
		}
	}
	entry := Entry{NodeID: nodeID, Outputs: outputs, CreationTimestamp: metav1.NewTime(now), LastHitTimestamp: metav1.NewTime(now)}
	if entry.Seal, err = c.Provenance.seal(c.Namespace, c.Name, key, entry); err != nil {
		return err
	}
	if err := put(cm, key, entry); err != nil {
		return err
	}
	if _, err := c.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("error creating cache entry: %w", err)
	}
	return nil
}

func put(cm *corev1.ConfigMap, key string, entry Entry) error {
	data, err := json.Marshal(entry)
	if err != nil {
		return fmt.Errorf("encoding cache entry %s: %w", key, err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = string(data)
	return nil
}

// checkLabel refuses a ConfigMap not labelled as a cache, with argo's messages: the controller never
// writes into a ConfigMap someone else owns.
func checkLabel(cm *corev1.ConfigMap) error {
	label, ok := cm.Labels[common.LabelKeyConfigMapType]
	switch {
	case !ok:
		return fmt.Errorf("memoization configmap doesn't have %s label, refusing to use it", common.LabelKeyConfigMapType)
	case label != common.LabelValueTypeConfigMapCache:
		return fmt.Errorf("memoization configmap doesn't have label %s = %s, refusing to use it", common.LabelKeyConfigMapType, common.LabelValueTypeConfigMapCache)
	}
	return nil
}

// ErrNoCache: the template names no cache ConfigMap.
var ErrNoCache = errors.New("cache could not be found or created")
