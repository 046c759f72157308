package controller

import (
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestAPassStartsFromTheNewerOfTheCacheCopyAndOurLastWrite(t *testing.T) {
	copyAt := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
			"metadata": map[string]any{"name": "wf", "namespace": "ns"}}}
		u.SetUID("u")
		u.SetResourceVersion(rv)
		return u
	}
	cases := []struct {
		sentence string
		wrote    string // our last write's resourceVersion ("": none)
		echoed   string // the informer delivered this resourceVersion after our write ("": not yet)
		// cacheFirst: the cache already shows this resourceVersion when our write is recorded (its echo
		// overtook the write's return).
		cacheFirst string
		cached     string
		wantRV     string // "": the pass is skipped
		wantOurs   bool
	}{
		{"with no write of ours the cache copy is used", "", "", "", "5", "5", false},
		{"a cache copy at our write is used", "7", "", "", "7", "7", false},
		{"a cache copy newer than our write is used (someone wrote since)", "7", "", "", "9", "9", false},
		{"a cache copy older than our write gives way to what our write stored", "7", "", "", "5", "7", true},
		{"after the echo, the stored object is no longer held", "7", "7", "", "7", "7", false},
		{"a copy older than our write after the echo (the cache went back) is skipped", "7", "7", "", "5", "", false},
		{"a newer write by someone else also drops the stored object", "7", "9", "", "5", "", false},
		{"an earlier resourceVersion delivered late keeps the stored object", "7", "6", "", "6", "7", true},
	}
	// The echo overtook the write's return: the cache already shows it when the write is recorded.
	overtaken := cases[1]
	overtaken.sentence, overtaken.cacheFirst = "a write whose echo reached the cache before it was recorded keeps no stored object", "7"
	cases = append(cases, overtaken)
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			c := &Controller{written: map[types.UID]lastWrite{}, log: slog.New(slog.DiscardHandler),
				inf: &informerSet{workflows: cache.NewSharedIndexInformer(nil, &unstructured.Unstructured{}, 0, cache.Indexers{})}}
			if tc.cacheFirst != "" {
				if err := c.inf.workflows.GetIndexer().Add(copyAt(tc.cacheFirst)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wrote != "" {
				stored := copyAt(tc.wrote) // as the API server answers: with managedFields
				stored.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "wfguard-controller", Operation: metav1.ManagedFieldsOperationUpdate}})
				c.recordWrite(stored)
			}
			if tc.cacheFirst != "" && c.written["u"].stored != nil {
				t.Error("our write kept a stored object the cache already shows")
			}
			if tc.echoed != "" {
				c.cacheCaughtUp(copyAt(tc.echoed))
			}
			cached := copyAt(tc.cached)
			got, ok := c.freshest(cached)
			// A stored object is held exactly while a pass starts from it: it never outlives the lag.
			if held := c.written["u"].stored != nil; held != tc.wantOurs {
				t.Errorf("stored object held after the pass = %v, want %v", held, tc.wantOurs)
			}
			switch {
			case tc.wantRV == "" && ok:
				t.Fatalf("the pass started from rv %s, want it skipped", got.GetResourceVersion())
			case tc.wantRV == "":
				return
			case !ok:
				t.Fatalf("the pass was skipped, want it to start from rv %s", tc.wantRV)
			}
			if len(got.GetManagedFields()) > 0 {
				t.Errorf("the pass's copy carries managedFields, which the informer's copies never do")
			}
			if got.GetResourceVersion() != tc.wantRV || (got != cached) != tc.wantOurs {
				t.Errorf("started from rv %s (our stored object: %v), want rv %s (ours: %v)", got.GetResourceVersion(), got != cached, tc.wantRV, tc.wantOurs)
			}
		})
	}
}
