package memoize

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argocache "github.com/argoproj/argo-workflows/v3/workflow/controller/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wfguard/wfguard/provenance"
)

func recordKey(t *testing.T, b byte) *provenance.Key {
	t.Helper()
	k, err := provenance.NewKey(bytes.Repeat([]byte{b}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// richOutputs have every kind of output a node saves, so that the seal is shown to survive their JSON.
func richOutputs() *wfv1.Outputs {
	v, result, exit := wfv1.AnyString("world"), "stdout", "0"
	return &wfv1.Outputs{
		Parameters: []wfv1.Parameter{{Name: "hello", Value: &v}},
		Artifacts: []wfv1.Artifact{{Name: "report", Path: "/tmp/r", ArtifactLocation: wfv1.ArtifactLocation{
			S3: &wfv1.S3Artifact{Key: "wf/pod/report.tgz", S3Bucket: wfv1.S3Bucket{Bucket: "b", Endpoint: "minio:9000"}}}}},
		Result: &result, ExitCode: &exit,
	}
}

// Under --memoize-trust=sealed only the entries the controller saved decide a node's outputs; under any
// (the default) every entry does, as in argo. The controller seals what it saves either way.
func TestOnlyEntriesTheControllerSavedCountWhenSealedEntriesAreTrusted(t *testing.T) {
	key, other := recordKey(t, 1), recordKey(t, 2)
	anyEntry, sealed := Provenance{Key: key, Trust: TrustAny}, Provenance{Key: key, Trust: TrustSealed}
	for _, tc := range []struct {
		sentence string
		lookup   Provenance
		// tamper changes the saved entry (its JSON as a map); nil leaves it.
		tamper func(entry map[string]any)
		// namespace, cache, key: where the entry is looked up ("" is where it was saved: ns, cache-config, k).
		namespace, cache, key string
		maxAge                string
		at                    time.Time
		wantHit               bool
		wantValue             string // the hit's parameter; "" is the saved "world"
		wantIgnored           string
	}{
		{sentence: "an entry the controller saved counts when only sealed entries count", lookup: sealed, wantHit: true},
		{sentence: "an entry the controller saved is a hit again once its last-hit time was rewritten", lookup: sealed,
			tamper: func(e map[string]any) { e["lastHitTimestamp"] = "2030-01-01T00:00:00Z" }, wantHit: true},
		{sentence: "an unsealed entry (argo's, or anyone's) counts under any, argo's behaviour", lookup: anyEntry,
			tamper: func(e map[string]any) { delete(e, "wfguardSeal") }, wantHit: true},
		{sentence: "forged outputs under the controller's seal count under any, argo's behaviour", lookup: anyEntry,
			tamper: forgeOutputs, wantHit: true, wantValue: "FORGED"},
		{sentence: "an unsealed entry is ignored when only sealed entries count", lookup: sealed,
			tamper: func(e map[string]any) { delete(e, "wfguardSeal") }, wantIgnored: IgnoredUnsealed},
		{sentence: "forged outputs under the controller's seal are ignored", lookup: sealed, tamper: forgeOutputs, wantIgnored: IgnoredInvalidSeal},
		{sentence: "an entry made younger is ignored, so maxAge holds", lookup: sealed,
			tamper: func(e map[string]any) { e["creationTimestamp"] = "2026-12-03T12:00:05Z" }, wantIgnored: IgnoredInvalidSeal},
		{sentence: "an entry claiming another node is ignored", lookup: sealed,
			tamper: func(e map[string]any) { e["nodeID"] = "node-2" }, wantIgnored: IgnoredInvalidSeal},
		{sentence: "a sealed entry copied under another key is ignored", lookup: sealed, key: "other-key", wantIgnored: IgnoredInvalidSeal},
		{sentence: "a sealed entry copied into another cache ConfigMap is ignored", lookup: sealed, cache: "other-cache", wantIgnored: IgnoredInvalidSeal},
		{sentence: "a sealed entry copied into another namespace is ignored", lookup: sealed, namespace: "other-ns", wantIgnored: IgnoredInvalidSeal},
		{sentence: "an entry sealed with another record key is ignored", lookup: Provenance{Key: other, Trust: TrustSealed}, wantIgnored: IgnoredInvalidSeal},
		{sentence: "an expired unsealed entry is a plain miss, not an ignored one", lookup: sealed, maxAge: "10s", at: now.Add(11 * time.Second),
			tamper: func(e map[string]any) { delete(e, "wfguardSeal") }},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			saved := Cache{Client: KubeConfigMaps{Kube: kube}, Namespace: "ns", Name: "cache-config", Provenance: anyEntry}
			if err := saved.Save(context.Background(), "k", "node-1", richOutputs(), now); err != nil {
				t.Fatal(err)
			}
			where := Cache{Client: saved.Client, Namespace: or(tc.namespace, "ns"), Name: or(tc.cache, "cache-config"), Provenance: tc.lookup}
			lookupKey := or(tc.key, "k")
			plant(t, kube, where, lookupKey, storedEntry(t, kube, saved, "k"), tc.tamper)
			before := storedEntry(t, kube, where, lookupKey)
			found, err := where.Lookup(context.Background(), lookupKey, tc.maxAge, later(tc.at))
			if err != nil || found.Hit != tc.wantHit || found.Ignored != tc.wantIgnored {
				t.Fatalf("Lookup = hit %v, ignored %q (%v); want hit %v, ignored %q", found.Hit, found.Ignored, err, tc.wantHit, tc.wantIgnored)
			}
			if want := or(tc.wantValue, "world"); found.Hit && found.Outputs.Parameters[0].Value.String() != want {
				t.Fatalf("outputs %+v, want hello=%s", found.Outputs, want)
			}
			if after := storedEntry(t, kube, where, lookupKey); tc.wantIgnored != "" && after["lastHitTimestamp"] != before["lastHitTimestamp"] {
				t.Fatalf("an ignored entry's last-hit time was rewritten: %v, was %v", after["lastHitTimestamp"], before["lastHitTimestamp"])
			}
		})
	}
}

// The entry the controller saves stays argo's: argo's own type reads it, the seal aside.
func TestASealedEntryIsStillArgosEntry(t *testing.T) {
	kube := fake.NewClientset()
	c := Cache{Client: KubeConfigMaps{Kube: kube}, Namespace: "ns", Name: "cache-config", Provenance: Provenance{Key: recordKey(t, 1)}}
	if err := c.Save(context.Background(), "k", "node-1", richOutputs(), now); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("ns").Get(context.Background(), "cache-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var theirs argocache.Entry
	if err := json.Unmarshal([]byte(cm.Data["k"]), &theirs); err != nil || !theirs.Hit() || theirs.NodeID != "node-1" ||
		theirs.Outputs.Parameters[0].Value.String() != "world" || !theirs.CreationTimestamp.Equal(&metav1.Time{Time: now}) {
		t.Fatalf("argo reads %+v (%v) from %s", theirs, err, cm.Data["k"])
	}
	if ours := storedEntry(t, kube, c, "k"); ours["wfguardSeal"] == nil {
		t.Fatalf("the saved entry has no seal: %v", ours)
	}
}

func forgeOutputs(e map[string]any) {
	e["outputs"] = map[string]any{"parameters": []any{map[string]any{"name": "hello", "value": "FORGED"}}}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func later(at time.Time) time.Time {
	if at.IsZero() {
		return now.Add(time.Second)
	}
	return at
}

// storedEntry is the JSON object stored under key in c's ConfigMap.
func storedEntry(t *testing.T, kube *fake.Clientset, c Cache, key string) map[string]any {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(c.Namespace).Get(context.Background(), c.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(cm.Data[key]), &entry); err != nil {
		t.Fatal(err)
	}
	return entry
}

// plant writes entry, changed by tamper, under key in c's ConfigMap, creating it with argo's label.
func plant(t *testing.T, kube *fake.Clientset, c Cache, key string, entry map[string]any, tamper func(map[string]any)) {
	t.Helper()
	if tamper != nil {
		tamper(entry)
	}
	data, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm, err := kube.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		cm, err = kube.CoreV1().ConfigMaps(c.Namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, Labels: cacheLabel()}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = string(data)
	if _, err := kube.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
