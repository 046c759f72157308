package controller

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/memoize"
)

// A memoize trust the cache cannot honour stops New before anything is built.
func TestAMemoizeTrustTheCacheCannotHonourIsRefused(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		trust    memoize.Trust
		want     string
	}{
		{"sealed without a record key is refused", memoize.TrustSealed, "memoize trust sealed needs the record key"},
		{"an unknown trust is named", "trusted", `memoize trust must be any or sealed, got "trusted"`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			clients, err := NewClients(&rest.Config{Host: "https://example"}, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(clients, Options{MemoizeTrust: tc.trust}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
