package provenance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// Purposes name what a seal vouches for, so a seal made for one kind of record never verifies another.
const (
	// PurposeAppliedAction seals a write-ahead record: (workflow UID, action UID, action name, outcome, reason).
	PurposeAppliedAction = "applied-action"
	// PurposeCronRun seals a CronWorkflow's run: (CronWorkflow UID, run name).
	PurposeCronRun = "cron-run"
	// PurposeWorkflowStart seals a workflow the controller validated and started: (workflow UID).
	PurposeWorkflowStart = "workflow-start"
	// PurposeMemoEntry seals a memoization cache entry: (namespace, cache ConfigMap, key, node ID, outputs JSON,
	// creation time).
	PurposeMemoEntry = "memo-entry"
)

// KeySize is the size of a generated key; shorter keys are refused.
const KeySize = 32

// Key seals and verifies records. The zero value is not usable: build one with NewKey or Load.
type Key struct{ secret []byte }

// NewKey returns a Key over secret, which must hold at least KeySize bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < KeySize {
		return nil, fmt.Errorf("a record key needs at least %d bytes, got %d", KeySize, len(secret))
	}
	return &Key{secret: append([]byte(nil), secret...)}, nil
}

// Seal is the seal of fields for purpose: an HMAC-SHA256 over each field length-prefixed, so no two field
// lists share an input ("ab","c" and "a","bc" seal differently), in unpadded base64url.
func (k *Key) Seal(purpose string, fields ...string) string {
	mac := hmac.New(sha256.New, k.secret)
	var n [8]byte
	for _, f := range append([]string{purpose}, fields...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		mac.Write(n[:])
		mac.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// SealLength is the length of every seal: 32 bytes of HMAC-SHA256 in unpadded base64url.
const SealLength = 43

// Verify reports whether seal is Seal(purpose, fields...), in constant time. A seal of another length is
// refused before any hashing: seals come from objects other identities write.
func (k *Key) Verify(seal, purpose string, fields ...string) bool {
	if len(seal) != SealLength {
		return false
	}
	return hmac.Equal([]byte(seal), []byte(k.Seal(purpose, fields...)))
}

// ErrNoKey is returned (wrapped) when the key Secret holds no usable key.
var ErrNoKey = errors.New("no usable record key")
