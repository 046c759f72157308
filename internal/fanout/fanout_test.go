package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/internal/fanout/fanouttest"
)

// Each starts goroutines; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEachMakesEveryCallAndReturnsItsErrorAtItsIndex(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		workers  int
		n        int
		failing  map[int]bool
	}{
		{"no calls make nothing", 4, 0, nil},
		{"fewer calls than workers are all made", 8, 3, map[int]bool{1: true}},
		{"many calls over few workers are all made, each error at its call's index", 3, 100, map[int]bool{0: true, 57: true, 99: true}},
		{"workers below one still make every call, one at a time", 0, 5, map[int]bool{4: true}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			calls := make([]atomic.Int32, tc.n)
			errs := Each(t.Context(), tc.workers, tc.n, func(i int) error {
				calls[i].Add(1)
				if tc.failing[i] {
					return fmt.Errorf("call %d", i)
				}
				return nil
			})
			if len(errs) != tc.n {
				t.Fatalf("%d errors for %d calls", len(errs), tc.n)
			}
			for i := range tc.n {
				if got := calls[i].Load(); got != 1 {
					t.Errorf("call %d made %d times, want once", i, got)
				}
				want := ""
				if tc.failing[i] {
					want = fmt.Sprintf("call %d", i)
				}
				if got := errString(errs[i]); got != want {
					t.Errorf("error %d = %q, want %q", i, got, want)
				}
			}
		})
	}
}

func TestEachKeepsExactlyWorkersCallsInFlight(t *testing.T) {
	for _, workers := range []int{1, 8, 16, 32} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			gate := fanouttest.NewGate(workers)
			Each(t.Context(), workers, 10*workers, func(int) error {
				gate.Enter()
				gate.Leave()
				return nil
			})
			if got := gate.Most(); got != workers {
				t.Errorf("at most %d calls in flight, want %d", got, workers)
			}
		})
	}
}

func TestACallNotMadeBecauseTheContextEndedGetsItsError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errs := Each(ctx, 1, 4, func(i int) error {
		if i == 1 {
			cancel() // the pass's deadline passes during the second call
		}
		return nil
	})
	for i, want := range []error{nil, nil, context.Canceled, context.Canceled} {
		if !errors.Is(errs[i], want) || (want == nil && errs[i] != nil) {
			t.Errorf("error %d = %v, want %v", i, errs[i], want)
		}
	}
}

// BenchmarkEach measures the helper's own cost per call (the calls do nothing).
func BenchmarkEach(b *testing.B) {
	for b.Loop() {
		Each(b.Context(), 16, 1000, func(int) error { return nil })
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
