package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/provenance"
)

const memoized = `
metadata: {name: %s, namespace: ns, uid: %s}
spec:
  entrypoint: world-to-file
  templates:
  - name: world-to-file
    memoize: {key: cache-key, maxAge: 10s, cache: {configMap: {name: cache-config}}}
    container: {image: busybox, command: [sh, -c, "echo world > /tmp/hello_world.txt"]}
    outputs: {parameters: [{name: hello, valueFrom: {path: /tmp/hello_world.txt}}]}
`

// A memoized template runs once and saves its outputs in argo's cache ConfigMap; the next workflow with the
// same key takes them from the cache without a pod (argo's memoize-simple), until the entry is older than
// maxAge.
func TestAMemoizedTemplateRunsOnceAndServesItsOutputsFromTheCache(t *testing.T) {
	w := newLockWorld(t)
	kube := fake.NewClientset()
	w.e.Caches = memoize.KubeConfigMaps{Kube: kube}
	first := w.workflow(fmt.Sprintf(memoized, "first", "11111111-1111-1111-1111-111111111111"), w.now)
	id := first.NodeID("first")
	w.pass(first)
	if w.pods.created[id] == nil {
		t.Fatalf("a miss did not run the template's pod: %+v", first.Status.Nodes[id])
	}
	if ms := first.Status.Nodes[id].MemoizationStatus; ms == nil || ms.Hit || ms.Key != "cache-key" || ms.CacheName != "cache-config" {
		t.Fatalf("memoization status %+v, want a miss on cache-config/cache-key", ms)
	}
	world := wfv1.AnyString("world")
	w.outputs[id] = &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "hello", Value: &world}}}
	w.done[id] = true
	w.pass(first)
	cm, err := kube.CoreV1().ConfigMaps("ns").Get(context.Background(), "cache-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status.Phase != wfv1.WorkflowSucceeded || cm == nil || cm.Data["cache-key"] == "" ||
		cm.Labels[common.LabelKeyConfigMapType] != common.LabelValueTypeConfigMapCache {
		t.Fatalf("workflow %s %q, cache %+v; want Succeeded and the outputs saved in a labelled ConfigMap", first.Status.Phase, first.Status.Message, cm)
	}

	second := w.workflow(fmt.Sprintf(memoized, "second", "22222222-2222-2222-2222-222222222222"), w.now)
	w.pass(second)
	n := second.Status.Nodes[second.NodeID("second")]
	if w.pods.created[n.ID] != nil || n.Phase != wfv1.NodeSucceeded || second.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("a hit ran a pod or did not succeed: node %s, workflow %s %q", n.Phase, second.Status.Phase, second.Status.Message)
	}
	if n.MemoizationStatus == nil || !n.MemoizationStatus.Hit || n.Outputs == nil || n.Outputs.Parameters[0].Value.String() != "world" {
		t.Fatalf("the hit node is %+v with outputs %+v, want a hit with the cached outputs", n.MemoizationStatus, n.Outputs)
	}

	w.now = w.now.Add(11 * time.Second) // past the entry's maxAge
	third := w.workflow(fmt.Sprintf(memoized, "third", "33333333-3333-3333-3333-333333333333"), w.now)
	w.pass(third)
	if w.pods.created[third.NodeID("third")] == nil {
		t.Fatal("an entry older than maxAge was served instead of running the template")
	}
}

// A cache ConfigMap that is not labelled as one is never used: the node errors with argo's message.
func TestAnUnlabelledCacheConfigMapErrorsTheNode(t *testing.T) {
	w := newLockWorld(t)
	w.e.Caches = memoize.KubeConfigMaps{Kube: fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-config"}})}
	wf := w.workflow(fmt.Sprintf(memoized, "wf", "44444444-4444-4444-4444-444444444444"), w.now)
	w.pass(wf)
	n := wf.Status.Nodes[wf.NodeID("wf")]
	want := "memoization configmap doesn't have workflows.argoproj.io/configmap-type label, refusing to use it"
	if len(w.pods.created) != 0 || n.Phase != wfv1.NodeError || n.Message != want {
		t.Fatalf("node %s %q with %d pods, want Error %q", n.Phase, n.Message, len(w.pods.created), want)
	}
}

// Under --memoize-trust=sealed an entry the controller did not save is a miss: the node runs, the workflow
// is told once (a Warning Event, the metric), and the outputs it saves are sealed, so the next workflow with
// the key is served from them.
func TestUnderSealedTrustAForgedEntryIsReportedOnceAndTheNodeRuns(t *testing.T) {
	w := newLockWorld(t)
	forged := fmt.Sprintf(`{"nodeID":"forged","outputs":{"parameters":[{"name":"hello","value":"FORGED"}]},"creationTimestamp":%q,"lastHitTimestamp":null}`,
		w.now.Format(time.RFC3339))
	kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-config",
		Labels: map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapCache}}, Data: map[string]string{"cache-key": forged}})
	key, err := provenance.NewKey(bytes.Repeat([]byte{1}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics, err := memoize.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w.e.Caches, w.e.MemoMetrics = memoize.KubeConfigMaps{Kube: kube}, metrics
	w.e.MemoProvenance = memoize.Provenance{Key: key, Trust: memoize.TrustSealed}

	first := w.workflow(fmt.Sprintf(memoized, "first", "55555555-5555-5555-5555-555555555555"), w.now)
	id := first.NodeID("first")
	events := w.pass(first).Events
	if w.pods.created[id] == nil || first.Status.Nodes[id].MemoizationStatus.Hit {
		t.Fatalf("the forged entry was served: node %+v", first.Status.Nodes[id])
	}
	events = append(events, w.pass(first).Events...) // a later pass reports it no more
	var ignored []Event
	for _, ev := range events {
		if ev.Reason == ReasonMemoEntryIgnored {
			ignored = append(ignored, ev)
		}
	}
	if len(ignored) != 1 || !ignored[0].Warning || !strings.Contains(ignored[0].Message, `"cache-key" in ConfigMap ns/cache-config`) ||
		!strings.Contains(ignored[0].Message, memoize.IgnoredUnsealed) {
		t.Fatalf("events %+v, want one Warning %s naming the entry and why", ignored, ReasonMemoEntryIgnored)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP wfguard_memoization_entries_ignored_total Memoization cache entries that would have decided a node's outputs but were not saved by the controller (--memoize-trust=sealed), ignored: the node ran. By reason (unsealed, invalid_seal); counted once per workflow and entry.
# TYPE wfguard_memoization_entries_ignored_total counter
wfguard_memoization_entries_ignored_total{reason="unsealed"} 1
`), "wfguard_memoization_entries_ignored_total"); err != nil {
		t.Fatal(err)
	}

	world := wfv1.AnyString("world")
	w.outputs[id] = &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "hello", Value: &world}}}
	w.done[id] = true
	w.pass(first)
	second := w.workflow(fmt.Sprintf(memoized, "second", "66666666-6666-6666-6666-666666666666"), w.now)
	w.pass(second)
	n := second.Status.Nodes[second.NodeID("second")]
	if w.pods.created[n.ID] != nil || !n.MemoizationStatus.Hit || n.Outputs.Parameters[0].Value.String() != "world" {
		t.Fatalf("the next workflow was not served the sealed real outputs: %+v, outputs %+v", n.MemoizationStatus, n.Outputs)
	}
}
