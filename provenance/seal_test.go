package provenance

import (
	"bytes"
	"strings"
	"testing"
)

func mustKey(t *testing.T, b byte) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestASealVerifiesOnlyWhatItWasMadeFor(t *testing.T) {
	k, other := mustKey(t, 1), mustKey(t, 2)
	seal := k.Seal(PurposeAppliedAction, "wf-uid", "action-uid", "Succeeded")
	for _, tc := range []struct {
		sentence string
		key      *Key
		seal     string
		purpose  string
		fields   []string
		want     bool
	}{
		{"the same key, purpose and fields verify", k, seal, PurposeAppliedAction, []string{"wf-uid", "action-uid", "Succeeded"}, true},
		{"another outcome does not", k, seal, PurposeAppliedAction, []string{"wf-uid", "action-uid", "Failed"}, false},
		{"another workflow does not", k, seal, PurposeAppliedAction, []string{"wf-uid-2", "action-uid", "Succeeded"}, false},
		{"another purpose does not", k, seal, PurposeCronRun, []string{"wf-uid", "action-uid", "Succeeded"}, false},
		{"fields cut at another place do not", k, seal, PurposeAppliedAction, []string{"wf-uidaction-uid", "", "Succeeded"}, false},
		{"another key does not", other, seal, PurposeAppliedAction, []string{"wf-uid", "action-uid", "Succeeded"}, false},
		{"no seal does not", k, "", PurposeAppliedAction, []string{"wf-uid", "action-uid", "Succeeded"}, false},
		{"a truncated seal does not", k, seal[:10], PurposeAppliedAction, []string{"wf-uid", "action-uid", "Succeeded"}, false},
		{"a megabyte of seal is refused unhashed", k, strings.Repeat("A", 1<<20), PurposeAppliedAction, []string{"wf-uid", "action-uid", "Succeeded"}, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := tc.key.Verify(tc.seal, tc.purpose, tc.fields...); got != tc.want {
				t.Fatalf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEverySealHasTheSameLength(t *testing.T) {
	k := mustKey(t, 1)
	for _, fields := range [][]string{nil, {""}, {strings.Repeat("x", 1<<16)}} {
		if got := len(k.Seal(PurposeCronRun, fields...)); got != SealLength {
			t.Fatalf("a seal is %d characters, want %d", got, SealLength)
		}
	}
}

func TestAShortKeyIsRefused(t *testing.T) {
	if _, err := NewKey(make([]byte, KeySize-1)); err == nil || !strings.Contains(err.Error(), "at least 32 bytes") {
		t.Fatalf("NewKey of 31 bytes = %v, want an error naming the size", err)
	}
}

func TestTheKeyIsCopied(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, KeySize)
	k, err := NewKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	before := k.Seal(PurposeCronRun, "x")
	secret[0] = 8
	if k.Seal(PurposeCronRun, "x") != before {
		t.Fatal("changing the caller's slice changed the key")
	}
}
