package extstatus

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/utils/clock"
)

// Bounds of inflating status.compressedNodes. Anyone who may create a Workflow may write its status (the CRD
// has no status subresource), so these bytes are untrusted: a few hundred KiB of gzip can state gigabytes.
const (
	// DefaultInflateRatio is how many bytes of nodes JSON one byte of gzip may inflate to (above
	// DefaultInflateFloor). Measured with gzip at its default level, as argo and Fit write it, on nodes the
	// engine made: the 10,000-item fan-out of TestATenThousandItemFanOutIsStoredCompressedAtTheDefaultLimit
	// (4,378,070 bytes of JSON, 278,753 of gzip) 15.7:1, 2,000 succeeded pods 17.6:1, a 1,000-task DAG over
	// withItems maps 18.7:1, extstatus's synthetic 10,000 nodes 11.8:1; 500 pods all carrying the same output
	// of 4 or 16 KiB (gzip finds each copy in its 32 KiB window) 68.4:1 and 95.9:1. A run of one byte, what a
	// bomb is made of, is 1,015:1. 200 is over ten times the engine's figures and twice the contrived ones.
	DefaultInflateRatio = 200
	// DefaultInflateFloor is what any input may inflate to whatever its size, so tiny inputs are never refused.
	DefaultInflateFloor = 1 << 20
	// DefaultMaxInflated bounds one workflow's nodes JSON whatever the ratio (was 256 MiB before the ratio).
	// The 1 MiB size limit (DefaultMaxWorkflowSize) leaves at most ~768 KiB of gzip for the nodes: ~14 MiB at
	// the engine's 18.7:1, 64 MiB only at 85:1.
	DefaultMaxInflated = 64 << 20
	// DefaultMaxDecoded bounds what decoding one workflow's nodes JSON, or the rest of its JSON, may allocate,
	// as DecodedSize estimates it before decoding: JSON says nothing of it, `{}` in an array of artifacts is 3
	// bytes and a 224-byte wfv1.Artifact, so 8 MiB of them held 746 MiB. Estimated on nodes the engine made:
	// the 10,000-item fan-out (4,378,088 bytes of JSON) 9.5 MiB (7.0 MiB held), a 2,000-pod DAG fan-out with
	// inputs and outputs (856,619 bytes) 2.5 MiB, 2.3 to 3 times their JSON; nodes that fit the 1 MiB size
	// limit compressed at the engine's 18.7:1 (~14 MiB of JSON) about 42 MiB. 128 MiB is 13 times the
	// fan-out, 3 times the largest the engine can store, and twice the 64 MiB of JSON DefaultMaxInflated
	// allows, so output-heavy nodes (their strings decode to about their JSON) are decoded up to that cap.
	DefaultMaxDecoded = 128 << 20
	// DefaultInflateBudget bounds the bytes all decodings of one Inflater hold at once: the nodes JSON an
	// inflation holds and the estimated decoding of any decoding over DefaultInflateFloor, compressed or not;
	// two of the largest (64 MiB of JSON, 128 MiB decoded), 36 of the 10,000-item fan-out (4.2 + 9.5 MiB).
	DefaultInflateBudget = 512 << 20
	// DefaultInflateBudgetWait is how long an inflation waits for room in the budget before it fails as
	// transient (ErrInflateBudget) and its pass is retried.
	DefaultInflateBudgetWait = 5 * time.Second
	// DefaultRememberedFailures bounds the memory of inputs that failed (refused or corrupt), by digest.
	DefaultRememberedFailures = 1024
)

// Outcomes of an Inflater's reads (Inflation.Outcome), the label values of the controller's metric.
const (
	// InflateInflated: inflated and decoded within the bounds.
	InflateInflated = "inflated"
	// InflateOverRatio: the gzip trailer states more than the ratio allows; nothing was inflated.
	InflateOverRatio = "over_ratio"
	// InflateOverSize: the gzip trailer states more than the absolute cap; nothing was inflated.
	InflateOverSize = "over_size"
	// InflateSizeMismatch: the data inflates past the size its gzip trailer states (a trailer that lies to
	// get under the bounds); inflating stopped one byte past it.
	InflateSizeMismatch = "size_mismatch"
	// InflateCorrupt: not base64, not gzip, or not nodes JSON.
	InflateCorrupt = "corrupt"
	// InflateFailedBefore: the same bytes failed before; they are refused again without being read.
	InflateFailedBefore = "failed_before"
	// InflateBudgetFull: the budget had no room within the wait; nothing was inflated, or nothing decoded.
	InflateBudgetFull = "budget_full"
	// InflateOverDecodedSize: the inflated JSON would decode to more than DefaultMaxDecoded, as DecodedSize
	// estimates it; nothing was decoded. Also the reason of a workflow whose own JSON (plain status.nodes,
	// the spec, stored templates) is refused so.
	InflateOverDecodedSize = "over_decoded_size"
)

// ErrInflateBudget is returned (wrapped) when an inflation found no room in its Inflater's budget in time:
// transient, the caller retries later. It is never remembered.
var ErrInflateBudget = errors.New("no room in the inflate budget")

// RefusedError is returned (wrapped) for compressed nodes over the bounds, or a workflow whose JSON would
// decode past DefaultMaxDecoded. Compressed nodes refused are remembered: the same bytes are refused again
// without being read.
type RefusedError struct {
	// Reason is InflateOverRatio, InflateOverSize, InflateSizeMismatch or InflateOverDecodedSize.
	Reason string
	// Compressed is the size of the gzip data, Stated the size its trailer states, Limit what it may inflate to
	// (for InflateOverDecodedSize: what it may decode to).
	Compressed, Stated, Limit int
	// Decoded is the estimate of the decoding when it stopped, past Limit (InflateOverDecodedSize).
	Decoded int64
	// Plain is set when what was refused is the workflow's own JSON (Stated bytes of it), not compressed nodes.
	Plain bool
}

// Field names what was refused, for people: "status.compressedNodes" or "the workflow's JSON".
func (e *RefusedError) Field() string {
	if e.Plain {
		return "the workflow's JSON"
	}
	return "status.compressedNodes"
}

func (e *RefusedError) Error() string {
	switch e.Reason {
	case InflateOverDecodedSize:
		of := "nodes JSON"
		if e.Plain {
			of = "workflow JSON (status.nodes and the rest)"
		}
		// The estimate stops once past the limit: Decoded is a floor, not the whole.
		return fmt.Sprintf("refused: %d bytes of %s would decode to over the %d bytes a workflow's decoding may take",
			e.Stated, of, e.Limit)
	case InflateSizeMismatch:
		return fmt.Sprintf("refused: %d bytes of gzip inflate past the %d bytes their trailer states", e.Compressed, e.Stated)
	case InflateOverSize:
		return fmt.Sprintf("refused: %d bytes of gzip state %d bytes of nodes, over the %d bytes any workflow's nodes may take",
			e.Compressed, e.Stated, e.Limit)
	}
	return fmt.Sprintf("refused: %d bytes of gzip state %d bytes of nodes (%d:1), over the %d bytes allowed for that size",
		e.Compressed, e.Stated, e.Stated/max(e.Compressed, 1), e.Limit)
}

// Inflation is what one read of compressed nodes did, for the Inflater's observer (the controller's metrics).
type Inflation struct {
	Outcome string
	// Inflated is how many bytes were decompressed.
	Inflated int
}

// InflaterConfig bounds an Inflater. Zero fields take the defaults above.
type InflaterConfig struct {
	Ratio, Floor, Max int
	// MaxDecoded bounds the estimated decoding of a workflow's nodes JSON, and of the rest of its JSON.
	MaxDecoded int64
	// Budget is the bytes of nodes JSON and of estimated decodings all decodings hold at once; at least Max
	// and MaxDecoded together.
	Budget int64
	// BudgetWait is how long an inflation waits for room; negative fails at once when the budget is full.
	BudgetWait time.Duration
	// Remembered is how many failed inputs are remembered.
	Remembered int
	// Clock times the budget wait.
	Clock clock.WithTicker
	// Observe, when set, hears every read.
	Observe func(Inflation)
}

// Inflater inflates status.compressedNodes within its bounds: at most Ratio bytes per byte of gzip above
// Floor and at most Max, stated by the gzip trailer and checked while inflating; at most MaxDecoded
// estimated bytes decoded from them, and from a workflow's own JSON; a budget of bytes for all its
// decodings at once; and a memory of failed inputs, so the same bytes are never inflated twice to fail
// again. One per process (the controller's, or the package's default for every other reader). Safe for
// concurrent use. A nil *Inflater is the package's default.
type Inflater struct {
	cfg    InflaterConfig
	budget *semaphore.Weighted

	mu       sync.Mutex
	failures map[[sha256.Size]byte]error
	order    [][sha256.Size]byte // the remembered digests, oldest replaced first
	next     int
}

// defaultInflater serves the package functions (FromUnstructured, InflateNodes, InflateUnstructured).
var defaultInflater = NewInflater(InflaterConfig{})

// NewInflater returns an Inflater with cfg's bounds.
func NewInflater(cfg InflaterConfig) *Inflater {
	if cfg.Ratio <= 0 {
		cfg.Ratio = DefaultInflateRatio
	}
	if cfg.Floor <= 0 {
		cfg.Floor = DefaultInflateFloor
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMaxInflated
	}
	if cfg.MaxDecoded <= 0 {
		cfg.MaxDecoded = DefaultMaxDecoded
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultInflateBudget
	}
	// The largest inflation and its decoding must fit alone: a weighted semaphore never grants more than its size.
	cfg.Budget = max(cfg.Budget, int64(cfg.Max)+1+cfg.MaxDecoded)
	if cfg.BudgetWait == 0 {
		cfg.BudgetWait = DefaultInflateBudgetWait
	}
	if cfg.Remembered <= 0 {
		cfg.Remembered = DefaultRememberedFailures
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Inflater{cfg: cfg, budget: semaphore.NewWeighted(cfg.Budget), failures: map[[sha256.Size]byte]error{}}
}

func (i *Inflater) orDefault() *Inflater {
	if i == nil {
		return defaultInflater
	}
	return i
}

// limit is how many bytes n bytes of gzip may inflate to.
func (i *Inflater) limit(n int) int {
	if n > (i.cfg.Max-i.cfg.Floor)/i.cfg.Ratio {
		return i.cfg.Max
	}
	return i.cfg.Floor + i.cfg.Ratio*n
}

// inflate decodes compressed (base64 of gzip) and hands the inflated bytes to decode, which decodes them
// into a value of shape into, within the bounds, and returns the estimated size of that decoding. A failure
// other than ErrInflateBudget is remembered with decode's: the same bytes fail again unread.
func (i *Inflater) inflate(compressed string, into *shape, decode func([]byte) error) (int64, error) {
	digest := sha256.Sum256([]byte(compressed))
	if err := i.failedBefore(digest); err != nil {
		i.observe(InflateFailedBefore, 0)
		return 0, err
	}
	outcome, inflated, decoded, err := i.inflateNew(compressed, into, decode)
	i.observe(outcome, inflated)
	if err != nil && !errors.Is(err, ErrInflateBudget) {
		i.remember(digest, err)
	}
	return decoded, err
}

func (i *Inflater) inflateNew(compressed string, into *shape, decode func([]byte) error) (outcome string, inflated int, decoded int64, err error) {
	raw, err := base64.StdEncoding.DecodeString(compressed)
	if err != nil {
		return InflateCorrupt, 0, 0, fmt.Errorf("not base64: %w", err)
	}
	// gzip ends with the size of what it holds (mod 2^32, far above any limit): a bomb that tells the truth is
	// refused unread, and one that lies is found one byte past what it stated.
	if len(raw) < 18 || raw[0] != 0x1f || raw[1] != 0x8b { // gzip's magic; a 10-byte header and an 8-byte trailer at least
		return InflateCorrupt, 0, 0, fmt.Errorf("inflating: %d bytes that are not gzip", len(raw))
	}
	stated := int(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
	if limit := i.limit(len(raw)); stated > limit {
		reason := InflateOverRatio
		if limit == i.cfg.Max {
			reason = InflateOverSize
		}
		return reason, 0, 0, &RefusedError{Reason: reason, Compressed: len(raw), Stated: stated, Limit: limit}
	}
	release, err := i.reserve(stated + 1)
	if err != nil {
		return InflateBudgetFull, 0, 0, err
	}
	defer release()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return InflateCorrupt, 0, 0, fmt.Errorf("inflating: %w", err)
	}
	defer func() { _ = zr.Close() }()
	// One byte more than stated, to find a trailer that lies; gzip itself checks the size at the end.
	buf := make([]byte, stated+1)
	n := 0
	for n < len(buf) && err == nil {
		var m int
		m, err = zr.Read(buf[n:])
		n += m
	}
	switch {
	case n > stated:
		return InflateSizeMismatch, n, 0, &RefusedError{Reason: InflateSizeMismatch, Compressed: len(raw), Stated: stated, Limit: i.limit(len(raw))}
	case !errors.Is(err, io.EOF): // truncated, a checksum that does not match, ...
		return InflateCorrupt, n, 0, fmt.Errorf("inflating: %w", err)
	}
	// What decoding allocates is not bounded by the JSON (8 MiB of empty artifacts hold 746 MiB): estimated
	// first, and held in the budget while it is made.
	decoded = decodedSize(buf[:n], into, i.cfg.MaxDecoded)
	if decoded > i.cfg.MaxDecoded {
		return InflateOverDecodedSize, n, decoded, &RefusedError{Reason: InflateOverDecodedSize, Compressed: len(raw), Stated: stated,
			Decoded: decoded, Limit: int(i.cfg.MaxDecoded)}
	}
	releaseDecoding, err := i.reserve(int(decoded))
	if err != nil {
		return InflateBudgetFull, n, 0, err
	}
	defer releaseDecoding()
	if err := decode(buf[:n]); err != nil {
		return InflateCorrupt, n, 0, fmt.Errorf("decoding the inflated nodes: %w", err)
	}
	return InflateInflated, n, decoded, nil
}

// reserve takes n bytes of the budget, waiting at most BudgetWait on the clock, and returns their release.
func (i *Inflater) reserve(n int) (func(), error) {
	release := func() { i.budget.Release(int64(n)) }
	if i.budget.TryAcquire(int64(n)) {
		return release, nil
	}
	full := fmt.Errorf("%w: %d bytes wanted, all of the %d in use by other inflations", ErrInflateBudget, n, i.cfg.Budget)
	if i.cfg.BudgetWait < 0 {
		return nil, full
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := i.cfg.Clock.NewTimer(i.cfg.BudgetWait)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := i.budget.Acquire(ctx, int64(n)); err != nil {
		return nil, fmt.Errorf("%w (waited %s)", full, i.cfg.BudgetWait)
	}
	return release, nil
}

// decodeWithin runs decode, a decoding estimated at size bytes, holding them in the budget when they are
// over Floor: the many small decodings of every pass never wait on it.
func (i *Inflater) decodeWithin(size int64, decode func() error) error {
	if size > int64(i.cfg.Floor) {
		release, err := i.reserve(int(size))
		if err != nil {
			return err
		}
		defer release()
	}
	return decode()
}

func (i *Inflater) observe(outcome string, inflated int) {
	if i.cfg.Observe != nil {
		i.cfg.Observe(Inflation{Outcome: outcome, Inflated: inflated})
	}
}

func (i *Inflater) failedBefore(digest [sha256.Size]byte) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.failures[digest]
}

// remember keeps err for digest, replacing the oldest entry once Remembered are kept.
func (i *Inflater) remember(digest [sha256.Size]byte, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.failures[digest]; ok {
		return
	}
	if len(i.order) < i.cfg.Remembered {
		i.order = append(i.order, digest)
	} else {
		delete(i.failures, i.order[i.next])
		i.order[i.next] = digest
		i.next = (i.next + 1) % len(i.order)
	}
	i.failures[digest] = err
}

// InflatedSize is the size of the nodes JSON compressed holds, as its gzip trailer states it: exact for
// nodes an Inflater inflated without error (gzip checks it), 0 for anything that is not gzip.
func InflatedSize(compressed string) int {
	raw, err := base64.StdEncoding.DecodeString(compressed)
	if err != nil || len(raw) < 18 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
}
