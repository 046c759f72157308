package promptqueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	testclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness drives a Queue on a fake clock; delayed adds land once the clock passes them.
type harness struct {
	t     *testing.T
	q     *Queue
	clock *testclock.FakeClock
	m     *Metrics
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.NewFakeClock(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	q := New(Config{Name: "test", Clock: clk, Metrics: m,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)})
	t.Cleanup(q.ShutDown)
	return &harness{t: t, q: q, clock: clk, m: m}
}

// deferred adds keys as the delaying queue does once a coalescing window, a requeue or a retry ends: through
// the base queue, bypassing Queue.Add.
func (h *harness) deferred(keys ...string) {
	for _, k := range keys {
		h.q.TypedRateLimitingInterface.Add(k)
	}
}

func (h *harness) waitLen(n int) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return h.q.Len() == n, nil
	})
	if err != nil {
		h.t.Fatalf("queue holds %d keys, want %d", h.q.Len(), n)
	}
}

// get hands out the next key and marks it done.
func (h *harness) get() string {
	h.t.Helper()
	k, shutdown := h.q.Get()
	if shutdown {
		h.t.Fatal("queue shut down")
	}
	h.q.Done(k)
	return k
}

func TestWorkersGetPromptKeysBeforeDeferredOnes(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *harness) []string
		want []string
	}{
		{"a key added for a change goes ahead of keys whose delayed requeue came first", func(h *harness) []string {
			h.deferred("d1", "d2")
			h.q.Add("p1")
			return []string{h.get(), h.get(), h.get()}
		}, []string{"p1", "d1", "d2"}},
		{"keys of one class keep the order they were added in", func(h *harness) []string {
			h.q.Add("p1")
			h.q.Add("p2")
			h.deferred("d1")
			h.deferred("d2")
			h.q.Add("p3")
			return []string{h.get(), h.get(), h.get(), h.get(), h.get()}
		}, []string{"p1", "p2", "p3", "d1", "d2"}},
		{"deferred keys that waited the patience take one turn in four from prompt keys", func(h *harness) []string {
			h.deferred("d1", "d2")
			h.clock.Step(DeferredPatience)
			for _, k := range []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7"} {
				h.q.Add(k)
			}
			var got []string
			for range 9 {
				got = append(got, h.get())
			}
			return got
		}, []string{"p1", "p2", "p3", "d1", "p4", "p5", "p6", "d2", "p7"}},
		{"a deferred key short of the patience waits for every prompt key", func(h *harness) []string {
			h.deferred("d1")
			h.clock.Step(DeferredPatience - time.Millisecond)
			for _, k := range []string{"p1", "p2", "p3", "p4", "p5"} {
				h.q.Add(k)
			}
			var got []string
			for range 6 {
				got = append(got, h.get())
			}
			return got
		}, []string{"p1", "p2", "p3", "p4", "p5", "d1"}},
		{"a queued deferred key added again for a change moves ahead", func(h *harness) []string {
			h.deferred("d1", "d2")
			h.q.Add("d2")
			return []string{h.get(), h.get()}
		}, []string{"d2", "d1"}},
		{"a queued prompt key delayed again stays prompt, and is handed out once", func(h *harness) []string {
			h.deferred("d1")
			h.q.Add("p1")
			h.deferred("p1")
			return []string{h.get(), h.get()}
		}, []string{"p1", "d1"}},
		{"a key requeued with AddAfter is deferred once its delay ends", func(h *harness) []string {
			h.q.AddAfter("a", time.Second)
			h.clock.Step(time.Second)
			h.waitLen(1)
			h.q.Add("p1")
			return []string{h.get(), h.get()}
		}, []string{"p1", "a"}},
		{"a key retried with AddRateLimited is deferred once its backoff ends", func(h *harness) []string {
			h.q.AddRateLimited("r")
			h.clock.Step(time.Second)
			h.waitLen(1)
			h.q.Add("p1")
			return []string{h.get(), h.get()}
		}, []string{"p1", "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if got := tc.run(h); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("handed out %v, want %v", got, tc.want)
			}
			if n := h.q.Len(); n != 0 {
				t.Errorf("%d keys left in the queue", n)
			}
		})
	}
}

func TestEachHandedOutKeyRecordsItsWaitUnderItsClass(t *testing.T) {
	h := newHarness(t)
	h.deferred("d1")
	h.q.Add("p1")
	h.clock.Step(300 * time.Millisecond)
	h.get()
	h.get()
	for _, c := range []struct {
		class   string
		wantSum float64
	}{{classPrompt, 0.3}, {classDeferred, 0.3}} {
		if n := testutil.CollectAndCount(h.m.wait); n != 2 {
			t.Fatalf("%d wait series, want 2 (prompt and deferred)", n)
		}
		if got := histogramSum(t, h.m.wait.WithLabelValues(c.class)); got < c.wantSum-1e-9 || got > c.wantSum+1e-9 {
			t.Errorf("%s wait sum %.3f s, want %.3f s", c.class, got, c.wantSum)
		}
	}
}

func histogramSum(t *testing.T, o prometheus.Observer) float64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum()
}
