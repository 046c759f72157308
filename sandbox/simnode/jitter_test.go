package simnode

import (
	"testing"
	"time"
)

func TestJitterIsSeededAndBounded(t *testing.T) {
	draw := func(seed int64) []time.Duration {
		n := &Node{}
		n.rnd = newRand(seed)
		var out []time.Duration
		for range 20 {
			out = append(out, n.jittered(time.Second, 0.5))
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed gave different delays at %d: %v vs %v", i, a[i], b[i])
		}
		if a[i] < 500*time.Millisecond || a[i] > 1500*time.Millisecond {
			t.Errorf("delay %v outside 1s ± 50%%", a[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("different seeds gave the same delays")
	}
	if got := (&Node{}).jittered(time.Second, 0); got != time.Second {
		t.Errorf("zero jitter changed the delay to %v", got)
	}
}
