package memoize

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func cacheLabel() map[string]string {
	return map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapCache}
}

// A saved entry is read back as a hit until it is older than maxAge; the ConfigMap is created with argo's
// label and entry format.
func TestASavedEntryIsAHitUntilItExpires(t *testing.T) {
	kube := fake.NewClientset()
	c := Cache{Client: KubeConfigMaps{Kube: kube}, Namespace: "ns", Name: "cache-config"}
	v := wfv1.AnyString("world")
	outputs := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "hello", Value: &v}}}
	if found, err := c.Lookup(context.Background(), "cache-key", "10s", now); found.Hit || err != nil {
		t.Fatalf("a missing cache ConfigMap is a hit (%v) or an error (%v), want a miss", found.Hit, err)
	}
	if err := c.Save(context.Background(), "cache-key", "node-1", outputs, now); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("ns").Get(context.Background(), "cache-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var entry Entry
	if err := json.Unmarshal([]byte(cm.Data["cache-key"]), &entry); err != nil || entry.NodeID != "node-1" ||
		cm.Labels[common.LabelKeyConfigMapType] != common.LabelValueTypeConfigMapCache {
		t.Fatalf("the cache ConfigMap is not argo's: labels %v, entry %q (%v)", cm.Labels, cm.Data["cache-key"], err)
	}
	for _, tc := range []struct {
		sentence string
		at       time.Time
		maxAge   string
		want     bool
	}{
		{"an entry younger than maxAge is a hit", now.Add(5 * time.Second), "10s", true},
		{"an entry older than maxAge is a miss", now.Add(11 * time.Second), "10s", false},
		{"without maxAge an entry never expires", now.Add(24 * time.Hour), "", true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			found, err := c.Lookup(context.Background(), "cache-key", tc.maxAge, tc.at)
			if err != nil || found.Hit != tc.want {
				t.Fatalf("hit %v (%v), want %v", found.Hit, err, tc.want)
			}
			if found.Hit && found.Outputs.Parameters[0].Value.String() != "world" {
				t.Fatalf("outputs %+v, want the saved ones", found.Outputs)
			}
		})
	}
}

// What the cache cannot use is refused with argo's messages.
func TestWhatTheCacheCannotUseIsRefused(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		cm       *corev1.ConfigMap
		key      string
		maxAge   string
		want     string
	}{
		{"a key that is not a ConfigMap key", nil, "a key", "", "invalid cache key: a key"},
		{"a maxAge that is not a duration", nil, "k", "ten", "invalid maxAge: "},
		{"a ConfigMap without the cache label", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}, "k", "",
			"memoization configmap doesn't have workflows.argoproj.io/configmap-type label, refusing to use it"},
		{"a ConfigMap labelled for something else", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c",
			Labels: map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapParameter}}}, "k", "",
			"memoization configmap doesn't have label workflows.argoproj.io/configmap-type = Cache, refusing to use it"},
		{"an entry that is not argo's JSON", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: cacheLabel()},
			Data: map[string]string{"k": "{"}}, "k", "", "malformed cache entry: could not unmarshal JSON"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.cm != nil {
				kube = fake.NewClientset(tc.cm)
			}
			_, err := Cache{Client: KubeConfigMaps{Kube: kube}, Namespace: "ns", Name: "c"}.Lookup(context.Background(), tc.key, tc.maxAge, now)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
}
